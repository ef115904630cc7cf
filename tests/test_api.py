"""The public library API: what ``import memd`` offers, and the README's examples of it."""

import subprocess
import sys

import memd
from memd.records import SearchAnswer
from tests.test_docs import code_block

PUBLIC = {
    "BackendUnavailable", "Config", "ConfigError", "DaemonError", "DaemonUnavailable", "Entry",
    "FlushAnswer", "FlushPrompt", "ForgetAnswer", "Freshness", "IndexCorrupt", "IndexReport",
    "InvalidParams", "InvalidRequest", "KeyEntry", "KeyList", "Lines", "MemdError", "Memory",
    "NotFound", "PathRefused", "SearchAnswer", "SearchRequest", "SearchResult", "Status",
    "StoreAnswer", "StoreError", "TimeWindow", "UnknownMethod", "WorkspaceConfig",
    "WorkspaceMissing",
    "WriteError", "Written", "__version__", "load_config", "open", "parse_config",
}  # fmt: skip


def test_all_names_exactly_the_public_api():
    """Adding or dropping a public name is a decision: this test must change with it."""
    assert set(memd.__all__) == PUBLIC
    for name in memd.__all__:
        assert getattr(memd, name) is not None


def test_every_error_is_a_memd_error():
    errors = [getattr(memd, n) for n in memd.__all__ if n.endswith(("Error", "Unavailable"))]
    errors += [memd.NotFound, memd.PathRefused, memd.InvalidParams, memd.IndexCorrupt]
    assert all(issubclass(e, memd.MemdError) for e in errors)


def write_config(tmp_path, ws) -> str:
    path = tmp_path / "memd.yaml"
    path.write_text(
        f"workspace: {ws.root}\nstate_dir: {tmp_path / 'state'}\nembeddings: {{provider: none}}\n"
    )
    return str(path)


def test_the_library_example_runs(tmp_path, monkeypatch, capsys):
    """The library page's example runs as printed, in a folder of its own, and finds the
    note it wrote (keyword only here, so the test needs no model)."""
    monkeypatch.chdir(tmp_path)
    example = code_block("python", "memd.open(folder").replace(
        'state_dir: state\\n"', 'state_dir: state\\nembeddings: {provider: none}\\n"'
    )
    assert "provider: none" in example
    namespace: dict = {}
    exec(compile(example, "docs/library.md", "exec"), namespace)
    answer = namespace["answer"]
    assert isinstance(answer, SearchAnswer)
    assert answer.results[0].path.startswith("memory/") and answer.results[0].score > 0
    out = capsys.readouterr().out
    assert "We picked Postgres 16" in out and "['editor'] False" in out
    assert (tmp_path / "memd-try" / "notes" / "MEMORY.md").exists()  # nowhere else


def test_a_library_user_sees_nothing_on_stdout(tmp_path, ws):
    """Indexing, writing and searching as a library print nothing (logs are not output)."""
    ws.write("MEMORY.md", "# Memory\n- We use Postgres.\n")
    script = (
        "import memd\n"
        f"with memd.open({write_config(tmp_path, ws)!r}) as m:\n"
        "    m.index()\n"
        "    m.flush([memd.Entry('Deploys moved to Thursdays.')])\n"
        "    assert m.search('postgres').results\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""


def test_records_are_the_socket_shape(tmp_path, ws):
    ws.write("MEMORY.md", "# Memory\n- We use Postgres.\n")
    with memd.open(write_config(tmp_path, ws)) as m:
        m.index()
        answer = m.search("postgres")
        as_dict = answer.as_dict()
        assert set(as_dict) == {"results", "mode", "provider", "model", "index"}
        assert as_dict["results"][0]["citation"] == answer.results[0].citation
        assert as_dict["index"]["stale"] is False
        assert m.get("MEMORY.md").as_dict()["from"] == 1
