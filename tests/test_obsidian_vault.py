"""An Obsidian vault read as Obsidian users write it (tests/data/obsidian-vault, written for
memd): front matter, daily notes, names and aliases, hidden text, drawings, nested tags
and links, through the command line and the daemon."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memd.memory import Memory

VAULT = Path(__file__).parent / "data" / "obsidian-vault"
_EMBED_OR_QUERY = re.compile(r"(?:!\[\[[^\]]*\]\]\s*)+|```dataview|TABLE .*|```")


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def vault(tmp_path):
    copy = tmp_path / "vault"
    shutil.copytree(VAULT, copy)
    before = _files(copy)
    yield copy
    assert _files(copy) == before  # memd only reads a vault


@pytest.fixture
def cli(tmp_path, ws, vault):
    ws.write("MEMORY.md", "# Memory\n")
    config = tmp_path / "config.yaml"
    config.write_text(
        f"workspace: {ws.root}\nextra_paths: [{vault}]\nstate_dir: {tmp_path / 'state'}\n"
        "embeddings: {provider: none}\n"
    )
    env = {**os.environ, "HOME": str(tmp_path), "MEMD_CONFIG": str(config)}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "memd", *args], capture_output=True, text=True, env=env
        )

    run.env = env
    return run


def paths(cli, *args: str) -> list[str]:
    out = cli("search", *args, "--json")
    assert out.returncode == 0, out.stderr
    return [r["path"].removeprefix("vault/") for r in json.loads(out.stdout)["results"]]


def test_bad_front_matter_is_reported_once_and_never_text(cli):
    out = cli("index")
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("Notes/Unreadable.md") == 1, out.stderr
    assert "front matter is not valid YAML" in out.stderr
    assert paths(cli, "glimmerstone", "--min-score", "0") == []
    (hit,) = json.loads(cli("search", "lanterns", "--json").stdout)["results"]
    assert hit["citation"] == "vault/Notes/Unreadable.md#L5-L7"


def test_empty_yaml_items_are_no_tags_or_aliases(cli):
    assert paths(cli, "none", "--min-score", "0") == []
    assert paths(cli, "gradients", "--tag", "None", "--min-score", "0") == []
    assert paths(cli, "gradients", "--tag", "ml/training") == ["Notes/Backpropagation.md"]


def test_nested_tags_match_their_parents_and_tags_in_comments_do_not_count(cli):
    assert paths(cli, "gradients", "--tag", "ml") == ["Notes/Backpropagation.md"]
    assert paths(cli, "kites", "--tag", "placeholder") == ["Notes/Drafts.md"]
    assert paths(cli, "kites", "--tag", "#placeholder/description") == ["Notes/Drafts.md"]
    assert paths(cli, "kites", "--tag", "placeholder/author", "--min-score", "0") == []
    assert paths(cli, "kites", "--tag", "place", "--min-score", "0") == []  # whole names only


@pytest.mark.parametrize(
    ("query", "note"),
    [
        ("BP", "Notes/Backpropagation.md"),  # an alias no text says
        ("Equity", "Economics/Equity.md"),  # another note says "equity" three times
        ("neuron superposition", "Notes/Neuron Superposition.md"),
        ("Backpropagation", "Notes/Backpropagation.md"),
    ],
)
def test_a_note_name_or_alias_ranks_that_note_first(cli, query, note):
    for mode in ("keyword", "auto"):
        found = json.loads(cli("search", query, "--mode", mode, "--json").stdout)["results"]
        assert found[0]["path"] == f"vault/{note}" and found[0]["score"] == 1.0


def test_comments_queries_and_drawing_data_are_not_indexed(cli):
    for hidden in ("zeppelins", "musing", "angle", "strokeColor", "rating", "OPTIONS menu"):
        assert paths(cli, hidden, "--min-score", "0") == [], hidden
    assert paths(cli, "gliders") == ["Notes/Drafts.md"]
    assert paths(cli, "condensation clouds") == ["Drawings/Sketch.excalidraw.md"]
    (hit,) = json.loads(cli("search", "evaporation", "--json").stdout)["results"]
    assert hit["start_line"] == 9 and "^a1B2c3" in hit["snippet"]  # snippets stay as written


def test_hidden_text_is_indexed_when_the_config_says_so(make_config, ws, vault):
    with Memory(make_config(extra_paths=[str(vault)], chunking={"hide": ["queries"]})) as m:
        m.index()
        found = [r.path for r in m.search("zeppelins", min_score=0).results]
        assert found == ["vault/Notes/Drafts.md"]  # comments are text now
        assert [r.path for r in m.search("angle", min_score=0).results] == [
            "vault/Drawings/Sketch.excalidraw.md"
        ]
        assert m.search("rating", min_score=0).results == []  # queries are still hidden


def test_dates_from_daily_note_names_and_front_matter(cli):
    assert paths(cli, "plumber", "--since", "2025-01-08", "--until", "2025-01-08") == [
        "Daily/2025-01-08.md"
    ]
    assert paths(cli, "plumber", "--since", "2025-01-09", "--min-score", "0") == []
    assert paths(cli, "tram", "--since", "2024-07-01", "--until", "2024-07-31") == [
        "Journal/Lisbon.md"
    ]
    assert paths(cli, "blossoms", "--until", "2023-04-02") == ["Journal/Kyoto.md"]
    assert paths(cli, "what did I do on 8 January 2025")[0] == "Daily/2025-01-08.md"


def test_a_link_finds_its_note_by_target_and_by_its_words(cli):
    """The linking note holds the link's words and the target's name; the target, which
    never says "polysemanticity", is found by the words of the link to it (anchor text)."""
    assert set(paths(cli, "polysemanticity")) == {
        "Notes/Interpretability.md",
        "Notes/Neuron Superposition.md",
    }
    assert "Notes/Interpretability.md" in paths(cli, "neuron superposition", "--mode", "keyword")


def test_canvas_text_nodes_are_notes_cited_in_the_canvas(cli):
    (hit,) = json.loads(cli("search", "heirloom tomato", "--json").stdout)["results"]
    assert hit["citation"] == "vault/Boards/Garden Plan.canvas#L5-L5"
    assert hit["snippet"] == "## Seeds\nOrder heirloom tomato seeds in February"
    assert paths(cli, "fence", "--tag", "chores") == ["Boards/Garden Plan.canvas"]
    assert paths(cli, "Garden Plan")[0] == "Boards/Garden Plan.canvas"  # its name
    shown = cli("get", "vault/Boards/Garden Plan.canvas", "--from", "5", "--lines", "1", "--json")
    assert '"id":"n3"' in json.loads(shown.stdout)["text"]  # the cited line is the node's


def test_a_note_lists_the_notes_that_link_to_it(cli):
    assert cli("index").returncode == 0
    out = cli("get", "vault/Notes/Neuron Superposition.md", "--json")
    assert json.loads(out.stdout)["backlinks"] == ["vault/Notes/Interpretability.md#L1-L3"]
    assert "backlinks" not in json.loads(cli("get", "vault/Notes/Drafts.md", "--json").stdout)
    out = cli("get", "vault/Notes/Neuron Superposition.md")
    assert "linked from vault/Notes/Interpretability.md#L1-L3" in out.stderr


def test_json_into_a_closed_pipe_is_no_traceback(cli, ws):
    for i in range(100):  # answers of over 64 KiB, more than a pipe holds
        ws.write(f"memory/n{i}.md", f"# N{i}\ncommon {'lorem ' * 150}\n")
    command = f"'{sys.executable}' -m memd search common --max-results 100 --json | head -c 100"
    out = subprocess.run(command, shell=True, capture_output=True, text=True, env=cli.env)
    assert len(out.stdout) == 100
    assert "Traceback" not in out.stderr and "BrokenPipe" not in out.stderr, out.stderr


def test_no_chunk_is_only_a_heading_an_embed_or_a_query(make_config, ws, vault):
    with Memory(make_config(extra_paths=[str(vault)])) as m:
        m.index()
        store = m.db.store
        chunks = {
            path: [c for _, c in store.file_chunks(row.id)] for path, row in store.files().items()
        }
    for path, found in chunks.items():
        for c in found:
            prose = [
                line
                for line in c.text.split("\n")
                if line.strip() and not line.startswith("#") and not _EMBED_OR_QUERY.fullmatch(line)
            ]
            assert prose, (path, c)
    (wide,) = chunks["vault/Notes/Wide.md"]  # a heading before a line over the budget
    assert (wide.start_line, wide.end_line) == (1, 4)
    (gallery,) = chunks["vault/Notes/Gallery.md"]
    assert "Light fades" in gallery.text and "sunset-over-harbour" in gallery.text


def serve_embedded(serve, embed_server, vault):
    """A daemon with ``vault`` in extra_paths and vectors from ``embed_server``, once
    every chunk has its vector."""
    d = serve(
        f"extra_paths: [{vault}]\nembeddings: {{provider: openai, model: concepts-1, "
        f"base_url: '{embed_server.url}', retries: 0, debounce_ms: 0}}\n"
    )

    def embedded() -> bool:
        status = d.call("status")
        return status["embedded_chunks"] > 0 and status["pending_embeddings"] == 0

    d.wait_for(embedded, timeout=60, what="vectors")
    return d


def test_the_daemon_ranks_names_first_in_hybrid_mode(serve, embed_server, ws, vault):
    """An alias that no text holds has a weak vector and weak keyword evidence: the
    default mode must still put its note first, above the relevance floor."""
    ws.write("MEMORY.md", "# Memory\n")
    d = serve_embedded(serve, embed_server, vault)
    for query, note in (("BP", "Backpropagation"), ("equity", "Equity")):
        answer = d.call("memory_search", query=query)
        assert answer["mode"] == "hybrid"
        assert answer["results"][0]["path"].endswith(f"/{note}.md"), answer
        assert answer["results"][0]["score"] == 1.0 and "below_floor" not in answer
    since = d.search("plumber", since="2025-01-01")
    assert [r["path"] for r in since] == ["vault/Daily/2025-01-08.md"]
    assert d.search("zeppelins", mode="keyword") == []
    assert [r["path"] for r in d.search("kites", tags=["placeholder"])] == ["vault/Notes/Drafts.md"]
    got = d.call("memory_get", path="vault/Notes/Neuron Superposition.md")
    assert got["backlinks"] == ["vault/Notes/Interpretability.md#L1-L3"]
