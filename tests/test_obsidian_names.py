"""A vault as Obsidian users keep one: topic notes named after what hundreds of notes are
tagged with, names typed without their accents or apostrophes, stubs with no body, links
to headings, and long notes whose chunks all hold the query's words."""

import json

import pytest

from memd.memory import Memory
from memd.search.request import SearchRequest
from memd.sources.names import name_key
from tests.test_obsidian_vault import serve_embedded


def _vault(root):
    (root / ".obsidian").mkdir(parents=True)
    notes = root / "Notes"
    notes.mkdir()
    for i in range(80):  # many notes tagged with the topic, named with it, full of it
        (notes / f"Database networking {i:02d}.md").write_text(
            f"---\ntags: [database, networking]\n---\n# Query plan {i:02d}\n\n"
            "The database index and the database cache: database networking notes, "
            f"database replica {i}, networking for the database.\n"
        )
    (notes / "Database.md").write_text("# Database\n\nA map of the notes on storage.\n")
    (notes / "Networking.md").write_text("Links to [[Database networking 01]] and others.\n")
    (notes / "Königsberg.md").write_text("# Königsberg\n\nSeven bridges, one walk.\n")
    (notes / "Postel's Law.md").write_text("Be liberal in what you accept.\n")
    (notes / "deep_learning.md").write_text("Layers of learned features.\n")
    (notes / "Able.md").write_text("---\naliases: [capable]\ntags: [term]\n---\n")
    (notes / "Blank Page.md").write_text("")
    (notes / "Only Hidden.md").write_text("%% a thought kept out of search %%\n")
    (notes / "Uses.md").write_text("Someone who is [[Able|capable]] of it.\n")
    (notes / "Castle.md").write_text(
        "# Castle\n\nSee [[#The Courtyard]] and [Adding towers](#adding-towers) and "
        "[up](#h). Tagged #stone here, [walls](https://w.org/wiki/Wall_(castle)#/Gates).\n\n"
        "## The Courtyard\n\nA well in the middle.\n\n> [!example] Style\n> ```css\n"
        "> .moat { color: #0000ff; }\n> ```\n\n- A list\n  ```css\n  .keep { color: #ff0000; }\n"
        "  ```\n"
    )
    # Names shared after folding, or by a drawing or canvas: the closest to what was typed
    (notes / "Virtualization.md").write_text("Hypervisors and guests.\n")
    (notes / "Recipe manager.md").write_text("A small app for recipes.\n")
    (notes / "Publish sites.md").write_text("Sites made with Publish.\n")
    (root / "Hub").mkdir()
    (root / "Hub" / "🗂️ Publish Sites.md").write_text("- [[Publish sites]]\n")
    (notes / "obsidian-tracker.md").write_text("---\naliases: [Tracker]\n---\nCharts of habits.\n")
    (notes / "tracker-plus.md").write_text("---\naliases: [Tracker+]\n---\nMore charts.\n")
    # Names that are time words: the note is meant, not the day
    (notes / "$?.md").write_text("The exit status of the last command.\n")
    (notes / "Yesterday.md").write_text("A plugin that opens the note of the day before.\n")
    (notes / "history-today.md").write_text("---\naliases: [History Today]\n---\nEvents.\n")
    (notes / "christmas.md").write_text("---\naliases: [Christmas]\n---\nA countdown.\n")
    section = "## Part {n}\n\nThe plugin loads part {n}; the plugin then waits.\n" + (
        "Filler words about the weather and the garden. " * 40
    )
    (notes / "Plugins.md").write_text(
        "---\ntags: [placeholder]\n---\n# Plugins\n\n"
        + "\n\n".join(section.format(n=n) for n in range(8))
    )
    (root / "Drawings").mkdir()
    (root / "Drawings" / "Virtualization.excalidraw.md").write_text(
        "---\nexcalidraw-plugin: parsed\n---\n# Excalidraw Data\n\n## Text Elements\n"
        "Virtualization ^a1\n\n%%\n## Drawing\n```json\n{}\n```\n%%\n"
    )
    (root / "Recipe manager.canvas").write_text(
        '{"nodes":[{"id":"r","type":"text","text":"Recipe manager","x":0,"y":0,"width":9,'
        '"height":9}]}\n'
    )
    (root / "Drawings" / "Empty Sketch.excalidraw.md").write_text(
        "---\nexcalidraw-plugin: parsed\n---\n# Excalidraw Data\n\n## Text Elements\n%%\n"
        '## Drawing\n```json\n{"elements": [{"type": "rectangle"}]}\n```\n%%\n'
    )
    nodes = [
        {"id": "g1", "type": "group", "label": "Spring sowing", "x": 0, "y": 0, "width": 500,
         "height": 500},
        {"id": "t1", "type": "text", "text": "Parsnips in trays", "x": 10, "y": 10, "width": 90,
         "height": 50},
        {"id": "t2", "type": "text", "text": "Parsnips outside", "x": 900, "y": 0, "width": 9,
         "height": 9},
    ]  # fmt: skip
    lines = ",\n".join(json.dumps(n, separators=(",", ":")) for n in nodes)
    (root / "Board.canvas").write_text('{"nodes":[\n' + lines + "\n]}\n")
    return root


@pytest.fixture(scope="module")
def mem(tmp_path_factory):
    from memd.configfile import parse_config

    tmp = tmp_path_factory.mktemp("names")
    (tmp / "ws").mkdir()
    config = parse_config(
        {
            "workspace": str(tmp / "ws"),
            "extra_paths": [str(_vault(tmp / "vault"))],
            "state_dir": str(tmp / "state"),
            "embeddings": {"provider": "none"},
            "search": {"decay": False},
        },
        env={},
    )
    with Memory(config) as m:
        m.index()
        yield m


def results(m, q, **kw):
    return m.search(SearchRequest(q, **kw)).as_dict()["results"]


def paths(m, q, **kw):
    return [r["path"] for r in results(m, q, **kw)]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("Königsberg", "konigsberg"),
        ("Postel's Law", "postels law"),
        ("Postel’s law", "postels law"),
        ("deep_learning", "deep learning"),
        ("Deep-Learning", "deep learning"),
        ("STRASSE", "strasse"),
        ("$?", "$?"),  # signs alone
        (" == ", "=="),
    ],
)
def test_names_fold_case_accents_apostrophes_hyphens_and_underscores(text, key):
    assert name_key(text) == key


@pytest.mark.parametrize(
    ("query", "note"),
    [
        ("Database", "Database.md"),  # 80 notes tagged database say it five times each
        ("networking", "Networking.md"),  # ... and are tagged networking
        ("Konigsberg", "Königsberg.md"),  # typed without its accent
        ("postels law", "Postel's Law.md"),  # typed without its apostrophe
        ("deep learning", "deep_learning.md"),
        ("Deep-Learning", "deep_learning.md"),
        ("capable", "Able.md"),  # a stub's alias
        ("Able", "Able.md"),  # a stub's name
        ("blank page", "Blank Page.md"),  # an empty note
        ("Virtualization", "Virtualization.md"),  # not the drawing of that name
        ("Recipe manager", "Recipe manager.md"),  # not the canvas of that name
        ("Publish sites", "Publish sites.md"),  # as typed, before '🗂️ Publish Sites'
        ("Tracker+", "tracker-plus.md"),  # an alias as typed, before one folded alike
        ("Yesterday", "Yesterday.md"),  # names that are time words
        ("History Today", "history-today.md"),
        ("Christmas", "christmas.md"),
        ("$?", "$?.md"),  # a name of signs alone
    ],
)
def test_a_name_typed_as_obsidian_finds_it_ranks_that_note_first(mem, query, note):
    for mode in ("keyword", "auto"):
        (top, *_) = results(mem, query, mode=mode)
        assert top["path"] == f"vault/Notes/{note}" and top["score"] == 1.0, (query, top)


def test_stubs_are_records_cited_from_line_1(mem):
    (hit, *_) = results(mem, "capable")
    assert hit["citation"] == "vault/Notes/Able.md#L1-L4"
    assert "aliases: [capable]" in hit["snippet"]
    assert hit["backlinks"] == ["vault/Notes/Uses.md#L1-L1"]  # what links to it
    assert all("backlinks" not in r for r in results(mem, "castle", min_score=0))
    assert paths(mem, "term", tags=["term"]) == ["vault/Notes/Able.md"]  # its tag filters
    (empty, *_) = results(mem, "blank page")
    assert empty["citation"] == "vault/Notes/Blank Page.md#L1-L1" and empty["snippet"] == ""
    (hidden, *_) = results(mem, "only hidden")
    assert hidden["path"] == "vault/Notes/Only Hidden.md" and "thought" not in hidden["snippet"]
    got = mem.get("vault/Notes/Able.md").as_dict()
    assert got["backlinks"] == ["vault/Notes/Uses.md#L1-L1"]  # what links to it


def test_a_drawing_without_text_is_a_record_not_a_text_elements_heading(mem):
    found = results(mem, "text elements", min_score=0)
    assert all(r["path"] != "vault/Drawings/Empty Sketch.excalidraw.md" for r in found)
    (top, *_) = results(mem, "empty sketch")
    assert top["path"] == "vault/Drawings/Empty Sketch.excalidraw.md"
    assert top["heading"] == "# Empty Sketch" and "Text Elements" not in top["snippet"]


def test_canvas_group_labels_head_their_nodes(mem):
    found = results(mem, "spring sowing", min_score=0, all_chunks=True)
    assert [(r["path"], r["heading"]) for r in found] == [("vault/Board.canvas", "# Spring sowing")]
    assert found[0]["snippet"] == "Parsnips in trays"


def test_links_to_headings_and_anchors_are_no_tags(mem):
    assert paths(mem, "castle", tags=["stone"]) == ["vault/Notes/Castle.md"]
    for tag in ("The", "Courtyard", "adding-towers", "Adding", "h"):
        assert paths(mem, "castle", tags=[tag], min_score=0) == [], tag
    meta = mem.db.store.file_meta("vault/Notes/Castle.md")
    assert meta.tags == ("stone",)


def test_chunks_of_one_note_take_one_place_unless_all_are_asked_for(mem):
    found = results(mem, "plugin", tags=["placeholder"], max_results=4)
    assert [r["path"] for r in found] == ["vault/Notes/Plugins.md"]
    assert found[0]["more_chunks"] >= 3
    every = results(mem, "plugin", tags=["placeholder"], max_results=4, all_chunks=True)
    assert [r["path"] for r in every] == ["vault/Notes/Plugins.md"] * 4
    assert all("more_chunks" not in r for r in every)
    for mode in ("keyword", "auto"):
        top = paths(mem, "database replica cache", mode=mode, max_results=10)
        assert len(top) == len(set(top)) == 10


def test_the_daemon_finds_names_and_stubs_first_and_gives_a_note_one_place(
    serve, embed_server, ws, tmp_path
):
    """In hybrid mode, with real vectors from an embedding server, on a real socket; an
    edit seen by the watcher is found by its name at once."""
    import subprocess
    import sys

    vault = _vault(tmp_path / "vault")
    ws.write("MEMORY.md", "# Memory\n")
    items = "\n".join(f"- item {i}: the kiwi vine grows by the shed" for i in range(90))
    ws.write("memory/long.md", f"# Long\n\n{items}\n")
    d = serve_embedded(serve, embed_server, vault)
    for query, note in (
        ("Konigsberg", "Königsberg.md"),
        ("postels law", "Postel's Law.md"),
        ("Database", "Database.md"),
        ("networking", "Networking.md"),
        ("capable", "Able.md"),
        ("blank page", "Blank Page.md"),
    ):
        answer = d.call("memory_search", query=query)
        assert answer["mode"] == "hybrid"
        top = answer["results"][0]
        assert top["path"] == f"vault/Notes/{note}" and top["score"] == 1.0, (query, answer)
        assert top.get("backlinks") == (
            ["vault/Notes/Uses.md#L1-L1"] if note == "Able.md" else None
        )
    assert d.search("castle", tags=["Courtyard"], min_score=0) == []
    found = d.search("plugin", tags=["placeholder"], max_results=4)
    assert [r["path"] for r in found] == ["vault/Notes/Plugins.md"] and found[0]["more_chunks"]
    every = d.search("plugin", tags=["placeholder"], max_results=4, all_chunks=True)
    assert [r["path"] for r in every] == ["vault/Notes/Plugins.md"] * 4
    out = subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(d.config_path), "search", "plugin",
         "--tag", "placeholder", "--max-results", "4", "--all-chunks", "--json"],
        capture_output=True, text=True, timeout=60, env={"HOME": str(tmp_path), "PATH": ""},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout)["results"]) == 4
    out = subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(d.config_path), "search", "capable"],
        capture_output=True, text=True, timeout=60, env={"HOME": str(tmp_path), "PATH": ""},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "-- linked from vault/Notes/Uses.md#L1-L1" in out.stdout  # a stub's backlinks
    lines = (ws.root / "memory/long.md").read_text().splitlines()

    def long_note(**params):  # an agent's note, hybrid, on the socket
        found = d.search("kiwi vine", max_results=20, **params)
        return [(r["start_line"], r["end_line"]) for r in found if r["path"] == "memory/long.md"]

    shown, every = _cited(long_note(), lines), long_note(all_chunks=True)
    assert set(shown.values()) == {1} and len(every) > 1  # no line twice
    assert shown.keys() == _cited(every, lines).keys()
    (vault / "Notes" / "Fresh Stub.md").write_text("---\naliases: [Überzeugung]\n---\n")
    d.wait_for(
        lambda: (
            [r["path"] for r in d.search("uberzeugung", mode="keyword")][:1]
            == ["vault/Notes/Fresh Stub.md"]
        ),
        timeout=30,
        what="the new stub by its alias",
    )


def _cited(ranges, lines):
    """The lines with text that ``ranges`` (start, end) cite, each with how many cite it."""
    counts = {}
    for start, end in ranges:
        for n in range(start, end + 1):
            if lines[n - 1].strip():
                counts[n] = counts.get(n, 0) + 1
    return counts


def _ranges(found):
    return [(r.start_line, r.end_line) for r in found]


def test_agent_memory_shows_no_line_twice_and_loses_none(make_config, ws):
    """MEMORY.md, daily notes and memory/ files hold separate entries, each an answer: a
    chunk that repeats lines of a better one (a long section cut with overlap) keeps only
    the lines it adds, so no line is cited twice and none that matched is dropped."""
    ws.write("MEMORY.md", "# Memory\n")
    items = "\n".join(
        f"- item {i}: the kiwi vine grows slowly on the wall by the shed" for i in range(90)
    )
    lines = ws.write("memory/long.md", f"# Long\n\n{items}\n").read_text().splitlines()
    ws.write("memory/days.md", "".join(f"## Day {i}\n\nA pomelo entry {i}.\n\n" for i in range(3)))

    with Memory(make_config()) as m:
        m.index()
        every = m.search("kiwi vine", all_chunks=True, max_results=20, min_score=0).results
        assert max(_cited(_ranges(every), lines).values()) > 1  # the chunks overlap
        folded = m.search("kiwi vine", max_results=20, min_score=0).results
        assert set(_cited(_ranges(folded), lines).values()) == {1}  # no line twice
        assert (
            _cited(_ranges(folded), lines).keys() == _cited(_ranges(every), lines).keys()
        )  # none lost
        assert sum(r.more_chunks or 0 for r in folded) == len(every) - len(folded)
        for r in folded:  # a cut result's snippet is its own lines
            assert r.snippet.split("\n")[0] == lines[r.start_line - 1]
        days = m.search("pomelo entry", max_results=10, min_score=0).results
        assert [r.path for r in days] == ["memory/days.md"] * 3
