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
