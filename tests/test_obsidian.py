import os

import pytest

from memd.memory import Memory
from memd.search.request import SearchRequest


@pytest.fixture
def vault(tmp_path):
    v = tmp_path / "real-vault"
    (v / "Notes").mkdir(parents=True)
    (v / ".obsidian").mkdir()
    (v / ".obsidian" / "workspace.md").write_text("obsidian internals zebra\n")
    (v / ".trash").mkdir()
    (v / ".trash" / "old.md").write_text("deleted zebra\n")
    (v / "Notes" / "Tomatoes.md").write_text(
        "---\ntags: [garden, food]\naliases: [Love apples]\n---\n"
        "# Tomatoes\n\nPlanted with [[Basil|the basil]] next to ![[bed-plan.png]].\n"
        "Worth a #harvest/2026 entry.\n\n> [!tip] Water daily\n> in the morning\n"
    )
    (v / "Notes" / "Basil.md").write_text(
        "---\ntags: herbs\n---\n# Basil\nSee [[Tomatoes#Care]].\n"
    )
    return v


@pytest.fixture
def mem(make_config, ws, vault, tmp_path):
    ws.write("MEMORY.md", "# Memory\n")
    link = tmp_path / "vault"
    os.symlink(vault, link)  # a vault reached through a symlink
    with Memory(make_config(extra_paths=[str(link)], search={"decay": False})) as m:
        m.index()
        yield m


def search(m, q, **kw):
    return [r["path"] for r in m.search(SearchRequest(q, min_score=0, **kw)).as_dict()["results"]]


def test_vault_notes_are_indexed_and_obsidian_folders_are_not(mem):
    files = set(mem.db.store.files())
    assert files == {"MEMORY.md", "vault/Notes/Tomatoes.md", "vault/Notes/Basil.md"}
    assert search(mem, "zebra") == []


def test_links_embeds_and_callouts_read_as_text(mem):
    assert "vault/Notes/Tomatoes.md" in search(mem, "the basil")
    assert "vault/Notes/Tomatoes.md" in search(mem, "bed-plan png")
    assert "vault/Notes/Basil.md" in search(mem, "tomatoes care")
    assert "vault/Notes/Tomatoes.md" in search(mem, "tip water daily")
    hits = mem.search(SearchRequest("the basil", min_score=0)).as_dict()["results"]
    (hit,) = [h for h in hits if h["path"] == "vault/Notes/Tomatoes.md"]
    assert "[[Basil|the basil]]" in hit["snippet"]  # snippets stay as written


def test_tags_from_front_matter_and_text_filter_and_search(mem):
    assert search(mem, "planted", tags=["garden"]) == ["vault/Notes/Tomatoes.md"]
    assert search(mem, "planted", tags=["#harvest/2026"]) == ["vault/Notes/Tomatoes.md"]
    assert search(mem, "basil", tags=["herbs"]) == ["vault/Notes/Basil.md"]
    assert search(mem, "planted", tags=["herbs"]) == []
    assert search(mem, "love apples")[0] == "vault/Notes/Tomatoes.md"  # an alias
    assert "vault/Notes/Basil.md" in search(mem, "herbs")  # a tag is searchable text


def test_awkward_names_line_endings_and_depth(ws, make_config):
    ws.write("memory/with spaces 🍅 番茄.md", "# 番茄\n西红柿 tomato notes\n")
    ws.write_bytes("memory/crlf.md", b"# CRLF\r\n\r\ncarriage returns here\r\n")
    ws.write_bytes("memory/bom.md", "\ufeff# BOM\nbyte order mark\n".encode())
    deep = "memory/" + "/".join(f"d{i}" for i in range(200)) + "/deep.md"
    ws.write(deep, "# Deep\nburied two hundred levels down\n")
    ws.write("memory/bad-fm.md", "---\ntags: [unclosed\n---\nmalformed front matter text\n")
    with Memory(make_config()) as m:
        report = m.index()
        assert report.added == 5 and report.skipped == 0
        assert any("front matter is not valid YAML" in w for w in report.warnings)
        assert search(m, "西红柿") == ["memory/with spaces 🍅 番茄.md"]
        (hit,) = m.search(SearchRequest("carriage", min_score=0)).as_dict()["results"]
        assert (hit["start_line"], hit["end_line"]) == (1, 3)
        assert m.get("memory/crlf.md").as_dict()["text"] == "# CRLF\n\ncarriage returns here\n"
        assert search(m, "byte order mark") == ["memory/bom.md"]
        assert search(m, "buried") == [deep]
        assert search(m, "malformed") == ["memory/bad-fm.md"]


def test_ten_thousand_files_in_one_folder(ws, make_config):
    folder = ws.root / "memory" / "inbox"
    folder.mkdir(parents=True)
    for i in range(10_000):
        (folder / f"n{i:05d}.md").write_text(f"# N{i}\nitem{i}\n")
    with Memory(make_config()) as m:
        assert m.index().added == 10_000
        assert search(m, "item9999") == ["memory/inbox/n09999.md"]


def test_a_20_mb_note_is_indexed(ws, make_config):
    section = "## Part {}\n\n" + "lorem ipsum dolor sit amet " * 30 + "\n\n"
    text = "".join(section.format(i) for i in range(24_500))
    assert len(text) > 20_000_000
    ws.write("memory/huge.md", text + "## End\nquetzal\n")
    with Memory(make_config()) as m:
        report = m.index()
        assert report.added == 1 and report.skipped == 0
        assert search(m, "quetzal") == ["memory/huge.md"]
