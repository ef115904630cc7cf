import memd


def test_all_exports_exist_and_are_public():
    """Everything in memd.__all__ exists, and nothing private is exported."""
    for name in memd.__all__:
        assert hasattr(memd, name), name
        assert not name.startswith("_") or name == "__version__"
    assert sorted(memd.__all__) == memd.__all__


def test_the_command_line_imports_only_what_talking_to_a_daemon_needs():
    """`memd search` answered by a daemon must not pay for numpy, markdown-it or the index."""
    import subprocess
    import sys

    heavy = [
        "numpy",
        "markdown_it",
        "structlog",
        "apsw",
        "openai",
        "memd.memory",
        "memd.serve.daemon",
    ]
    code = (
        "import sys, memd, memd.cli.main, memd.serve.router, memd.client; "
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_keyword_search_on_the_index_needs_no_numpy(tmp_path):
    """Without a daemon, `memd search` and `memd get` with keyword search load no numpy
    (~50 ms of a one-shot command) and no write side; each loads when it is used."""
    import subprocess
    import sys

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "MEMORY.md").write_text("# Memory\n- We use Postgres.\n")
    code = f"""
import sys
from memd.cli.main import main
assert main(["--config", {str(tmp_path / "c.yaml")!r}, "search", "postgres"]) == 0
assert main(["--config", {str(tmp_path / "c.yaml")!r}, "get", "MEMORY.md"]) == 0
loaded = ("numpy", "memd.write.journal", "memd.write.writer", "ctypes")
print([m for m in loaded if m in sys.modules])
"""
    (tmp_path / "c.yaml").write_text(
        f"workspace: {tmp_path / 'ws'}\nstate_dir: {tmp_path / 's'}\n"
        "embeddings: {provider: none}\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "[]"


def test_a_search_without_a_daemon_loads_only_what_a_search_needs(tmp_path):
    """A one-shot `memd search` whose walk finds nothing changed loads no parsing, chunking,
    tokenizer, transcripts, team or daemon code (issue 32: start-up was most of its time);
    one that finds an edited note still reads it, and loads them for that. Which modules
    are loaded, not how long it took: the machine's load cannot fail it."""
    import json
    import subprocess
    import sys

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n- The database migration runs on Fridays.\n")
    (ws / "memory" / "2026-01-20.md").write_text("# 2026-01-20\n\n## Database\nmigration plan\n")
    config = tmp_path / "c.yaml"
    config.write_text(
        f"workspace: {ws}\nstate_dir: {tmp_path / 's'}\nsocket: {tmp_path / 'memd.sock'}\n"
        "embeddings: {provider: none}\n"
    )
    lazy = [
        "numpy", "markdown_it", "tiktoken", "psycopg", "watchfiles", "structlog", "asyncio",
        "openai", "concurrent.futures", "difflib", "multiprocessing", "memd.index.prepare",
        "memd.index.regrow", "memd.index.publish", "memd.index.turnchunks",
        "memd.sources.transcripts", "memd.sources.redact", "memd.sources.canvas",
        "memd.write.journal", "memd.review.reviewer", "memd.search.team", "memd.serve.daemon",
        "memd.serve.watcher", "memd.serve.server",
    ]  # fmt: skip
    code = f"""
import contextlib, io, json, sys
from memd.cli.main import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(["--config", {str(config)!r}, "search", "database migration", "--json"])
assert code == 0
print(json.dumps({{"loaded": [m for m in {lazy!r} if m in sys.modules],
                   "paths": [r["path"] for r in json.loads(out.getvalue())["results"]]}}))
"""

    def search() -> dict:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.splitlines()[-1])

    index = [sys.executable, "-m", "memd", "--config", str(config), "index"]
    subprocess.run(index, check=True, capture_output=True)
    nothing_changed = search()
    assert nothing_changed["loaded"] == []
    assert sorted(nothing_changed["paths"]) == ["MEMORY.md", "memory/2026-01-20.md"]

    (ws / "memory" / "2026-01-21.md").write_text("# 2026-01-21\n\nThe database migration ran.\n")
    edited = search()  # no daemon: the walk must still see the new note, and read it
    assert "memory/2026-01-21.md" in edited["paths"]
    assert "memd.index.prepare" in edited["loaded"]
