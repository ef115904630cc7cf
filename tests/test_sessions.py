import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memd.configfile import parse_config
from memd.errors import InvalidParams, NotFound, PathRefused
from memd.memory import Memory
from memd.search.request import SearchRequest
from memd.serve.methods import call
from memd.sources.redact import MARK

DATA = Path(__file__).parent / "data" / "sessions"
FORMATS = ("claude-code", "codex", "openclaw", "jsonl")


@pytest.fixture
def folders(tmp_path):
    """The sample transcripts, copied where a test may change them."""
    shutil.copytree(DATA, tmp_path / "sessions")
    return tmp_path / "sessions"


@pytest.fixture
def session_config(make_config, folders, ws):
    ws.write("memory/2026-01-20.md", "# 2026-01-20\n\n## Database\nWe move the order service "
                                     "to Postgres 16.\n")  # fmt: skip

    def make(**raw):
        raw.setdefault("sessions", [{"path": str(folders / f), "format": f} for f in FORMATS])
        raw.setdefault("search", {"min_score": 0.0})
        return make_config(**raw)

    return make


@pytest.fixture
def mem(session_config):
    with Memory(session_config()) as m:
        m.index()
        yield m


def digest(folder: Path) -> dict:
    return {str(p): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}  # fmt: skip


def find(mem, query, **kw):
    return mem.search(SearchRequest(query, **kw)).results


def cited(folders, result) -> str:
    """The transcript lines a result cites, as they are in the file."""
    fmt, rel = result.path.removeprefix("sessions/").split("/", 1)
    lines = (folders / fmt / rel).read_text().split("\n")
    return "\n".join(lines[result.start_line - 1 : result.end_line])


@pytest.mark.parametrize(
    ("query", "fmt", "words"),
    [
        ("order_status timestamptz", "claude-code", "order_status"),
        ("backup retention db-2", "codex", "retention keeps 90 days"),
        ("Osteria Nonna reference", "openclaw", "NONNA-2291"),
        ("invoices sent twice", "jsonl", "invoices are sent twice"),
    ],
)
def test_each_host_is_searchable_with_line_exact_citations(mem, folders, query, fmt, words):
    """A transcript's chunk says its source, session and time, and cites real lines."""
    hit = find(mem, query)[0]
    assert hit.source == "sessions" and hit.path.startswith(f"sessions/{fmt}/")
    assert hit.heading.startswith("session ") and " · 2026-01-2" in hit.heading
    assert words in cited(folders, hit)
    assert hit.citation == f"{hit.path}#L{hit.start_line}-L{hit.end_line}"
    got = mem.get(hit.path, start=hit.start_line, lines=hit.end_line - hit.start_line + 1)
    assert got.lines == hit.end_line - hit.start_line + 1 and words in got.text


def test_chunks_carry_the_session_id_and_the_turns_time(mem):
    hit = find(mem, "order_status timestamptz")[0]
    assert hit.heading == "session 6f1d2c3a-8b4e-4c1f-9a2b-3c4d5e6f7a8b · 2026-01-20 09:12"


def test_secrets_never_reach_the_index_or_memory_get(mem, folders):
    secrets = ["Tr0ub4dor3", "Q9x8W7v6U5t4S3r2Q1p0", "ghp_R2d2C3po", "AKIAIOSFODNN7EXAMPLE",
               "eyJzdWIiOiJub25uYSIsImlhdCI6MTcwMDAwMDAwMH0"]  # fmt: skip
    for secret in secrets:
        assert not find(mem, secret), secret
    rows = mem.db.store.db.execute("SELECT text FROM chunks").fetchall()
    assert not any(s in text for (text,) in rows for s in secrets)
    hit = find(mem, "staging database deploy token")[0]
    assert MARK in hit.snippet
    got = mem.get(hit.path, start=1, lines=100)
    assert not any(s in got.text for s in secrets) and MARK in got.text
    fmt, rel = hit.path.removeprefix("sessions/").split("/", 1)
    assert got.total_lines == len((folders / fmt / rel).read_text().splitlines())


def test_a_chained_assignment_never_reaches_search_or_memory_get(session_config, folders):
    """The value behind "credential: aws_secret_access_key =" is redacted, not only the name."""
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    line = f"here is the credential: aws_secret_access_key = {secret} for the backup bucket"
    path = folders / "jsonl" / "support-bot" / "2026-01-24.jsonl"
    path.write_text(json.dumps({"role": "user", "content": line, "session": "s-24"}) + "\n")
    with Memory(session_config()) as m:
        m.index()
        assert not find(m, "wJalrXUtnFEMI") and not find(m, secret)
        (hit,) = [r for r in find(m, "credential backup bucket") if r.path.endswith("01-24.jsonl")]
        assert secret.split("/")[0] not in hit.snippet and MARK in hit.snippet
        got = m.get(hit.path)
        assert "wJalrXUtnFEMI" not in got.text and f"aws_secret_access_key = {MARK}" in got.text


def test_memd_never_writes_a_transcript(session_config, folders):
    before = digest(folders)
    with Memory(session_config()) as m:
        m.index()
        m.index(full=True)
        for hit in find(m, "backup order postgres booking", max_results=10):
            m.get(hit.path)
    assert digest(folders) == before


def test_sources_choose_notes_or_transcripts(mem):
    assert {r.source for r in find(mem, "postgres order service", max_results=10)} == {
        "daily",
        "sessions",
    }
    assert {r.source for r in find(mem, "postgres", sources=("memory",))} == {"daily"}
    assert {r.source for r in find(mem, "postgres", sources=("sessions",))} == {"sessions"}
    with pytest.raises(InvalidParams) as err:
        find(mem, "postgres", sources=("notes",))
    assert err.value.param == "sources"


def test_a_note_ranks_above_a_transcript_saying_the_same(ws, session_config, folders):
    (folders / "jsonl" / "same.jsonl").write_text(
        json.dumps({"role": "user", "content": "The release train leaves every second Tuesday."})
        + "\n"
    )
    ws.write("memory/2026-01-23.md", "# 2026-01-23\n\nThe release train leaves every second "
                                     "Tuesday.\n")  # fmt: skip
    with Memory(session_config()) as m:
        m.index()
        first, second = find(m, "release train schedule every second Tuesday")[:2]
    assert first.source == "daily" and second.source == "sessions"


def test_a_growing_transcript_is_read_on_from_where_it_stopped(session_config, folders):
    path = folders / "jsonl" / "support-bot" / "2026-01-23.jsonl"
    # Over HEAD_BYTES, so a change in its middle shows whether old lines are read again.
    filler = [json.dumps({"role": "user", "content": f"filler line {n} " + "x" * 80})
              for n in range(60)]  # fmt: skip
    path.write_text(path.read_text() + "\n".join(filler) + "\n")
    with Memory(session_config()) as m:
        m.index()
        before = {r.chunk_id for r in _chunks(m, path.name)}
        text = path.read_text().replace("filler line 30 ", "changed line 30")  # same length
        appended = json.dumps({"role": "assistant", "content": "Refunds go out on Mondays."})
        last = json.dumps({"role": "user", "content": "half typed quokka"})
        path.write_text(text + appended + "\n" + last[:-2])  # the word, not the line end
        report = m.index()
        assert report.changed == 1 and report.added == 0
        after = _chunks(m, path.name)
        assert before <= {r.chunk_id for r in after}  # old chunks kept as they were
        new = [r for r in after if r.chunk_id not in before]
        assert [r.start_line for r in new] == [text.count("\n") + 1]
        assert not find(m, "changed")  # lines already read are not read again
        assert find(m, "refunds mondays")[0].start_line == text.count("\n") + 1
        assert not find(m, "quokka")  # a line is read once it is complete
        path.write_text(path.read_text() + last[-2:] + "\n")
        m.index()
        assert find(m, "quokka")


def _chunks(m, name):
    rows = m.db.store.db.execute(
        "SELECT c.id, c.start_line FROM chunks c JOIN files f ON f.id = c.file_id "
        "WHERE f.path LIKE ?", (f"%{name}",),
    ).fetchall()  # fmt: skip

    class Row:
        def __init__(self, chunk_id, start_line):
            self.chunk_id, self.start_line = chunk_id, start_line

    return [Row(*r) for r in rows]


def test_a_rewritten_transcript_is_read_again(mem, folders):
    path = folders / "openclaw" / "2b7e9f10-4c2d-4e8a-9f1b-7d6c5b4a3e21.jsonl"
    header = {"type": "session", "id": "new", "timestamp": "2026-01-25T10:00:00Z"}
    message = {"type": "message", "timestamp": "2026-01-25T10:00:01Z",
               "message": {"role": "user", "content": "Cancel the Nonna booking."}}  # fmt: skip
    path.write_text(f"{json.dumps(header)}\n{json.dumps(message)}\n")
    report = mem.index()
    assert report.changed == 1
    assert not find(mem, "NONNA-2291")
    assert find(mem, "cancel booking")[0].heading.startswith("session new · 2026-01-25")


def test_old_transcripts_leave_the_index_not_the_disk(session_config, folders):
    path = folders / "codex" / "2026" / "01" / "21"
    old = next(path.glob("*.jsonl"))
    with Memory(session_config()) as m:
        m.index()
        assert find(m, "backup retention db-2")
        month_ago = time.time() - 31 * 86400
        os.utime(old, (month_ago, month_ago))
        assert m.index().removed == 1
        assert not find(m, "backup retention db-2")
        assert old.exists()
    week = [{"path": str(folders / "codex"), "format": "codex", "max_age_days": 60}]
    with Memory(session_config(sessions=week)) as m:
        m.index()
        assert find(m, "backup retention db-2")


def test_memory_get_on_transcripts_refuses_other_paths(mem):
    for bad in ("sessions/codex/../claude-code/x.jsonl", "sessions/unknown/a.jsonl",
                "sessions/claude-code/notes.txt", "sessions/claude-code/a/b/c.jsonl"):  # fmt: skip
        with pytest.raises(PathRefused):
            mem.get(bad)
    with pytest.raises(NotFound):
        mem.get("sessions/openclaw/missing.jsonl")


def test_time_words_window_transcripts_too(mem):
    got = find(mem, "what did we discuss about the backups on 21 January", now="2026-02-01")
    assert got[0].path.startswith("sessions/codex/")


def test_sources_through_the_socket_methods_and_the_cli(mem, session_config, tmp_path):
    answer = call(lambda name: mem, "memory_search",
                  {"query": "postgres", "sources": ["sessions"], "min_score": 0})  # fmt: skip
    assert {r["source"] for r in answer["results"]} == {"sessions"}
    config = tmp_path / "cli.yaml"
    sessions = [{"path": s.path.as_posix(), "format": s.format}
                for s in mem.config.workspaces[0].sessions]  # fmt: skip
    config.write_text(
        json.dumps(
            {
                "workspace": str(mem.workspace.path),
                "state_dir": str(mem.config.state_dir),
                "embeddings": {"provider": "none"},
                "sessions": sessions,
            }
        )
    )
    out = subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(config), "search", "postgres",
         "--source", "memory", "--json", "--min-score", "0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert {r["source"] for r in json.loads(out.stdout)["results"]} == {"daily"}


def test_config_sessions(make_config, tmp_path):
    c = make_config(sessions=[{"format": "claude-code"},
                              {"path": "~/logs", "format": "jsonl", "tools": "omit",
                               "max_age_days": 7, "name": "bot"}])  # fmt: skip
    first, second = c.workspaces[0].sessions
    assert first.path == tmp_path / ".claude" / "projects" and first.max_age_days == 30
    assert (second.format, second.tools, second.max_age_days, second.name) == (
        "jsonl", "omit", 7, "bot")  # fmt: skip
    c = parse_config({"workspaces": {"a": str(tmp_path / "a"),
                                     "b": {"workspace": str(tmp_path / "b"), "sessions": []}},
                      "sessions": [{"format": "codex"}]}, env={"HOME": str(tmp_path)})  # fmt: skip
    assert [len(w.sessions) for w in c.workspaces] == [1, 0]


def test_the_daemon_watches_session_folders(serve, folders):
    """A line appended to a transcript while the daemon runs is found within seconds."""
    d = serve(f"sessions: [{{path: {folders / 'jsonl'}, format: jsonl}}]\n")
    d.wait_for(lambda: d.search("invoices sent twice"), what="first index")
    path = folders / "jsonl" / "support-bot" / "2026-01-23.jsonl"
    with open(path, "a") as f:
        f.write(json.dumps({"role": "assistant", "content": "Mailer fixed in release 7.2."}) + "\n")

    def appended():
        return [r for r in d.search("mailer fixed release 7.2") if r["start_line"] == 6]

    (hit,) = d.wait_for(appended, what="the appended line")
    assert hit["source"] == "sessions" and hit["end_line"] == 6
    assert d.call("memory_get", path=hit["path"], **{"from": 6})["text"].count("\n") == 1


def test_an_extra_folder_named_sessions_does_not_take_the_transcripts_prefix(
    make_config, tmp_path, folders
):
    vault = tmp_path / "sessions-notes" / "sessions"
    vault.mkdir(parents=True)
    (vault / "plan.md").write_text("# Plan\nThe offsite agenda is final.\n")
    sessions = [{"path": str(folders / "jsonl"), "format": "jsonl"}]
    with Memory(make_config(extra_paths=[str(vault)], sessions=sessions)) as m:
        m.index()
        assert find(m, "offsite agenda", min_score=0)[0].path == "sessions-2/plan.md"
        assert find(m, "offsite agenda", sources=("memory",), min_score=0)
        assert find(m, "invoices", sources=("sessions",), min_score=0)[0].source == "sessions"


def test_a_transcript_named_in_bytes_that_are_not_utf8_is_skipped_and_said(mem, folders):
    """Its name cannot be stored (the pass used to fail on it); the rest are indexed."""
    folder = os.fsencode(folders / "jsonl" / "support-bot")
    line = json.dumps({"role": "user", "content": "the wombat ledger"}) + "\n"
    with open(os.path.join(folder, b"odd-\xff.jsonl"), "w") as f:
        f.write(line)
    (folders / "jsonl" / "support-bot" / "2026-02-01.jsonl").write_text(
        json.dumps({"role": "user", "content": "the platypus ledger"}) + "\n"
    )
    report = mem.index()
    assert report.skipped == 1
    assert any("odd-\\xff.jsonl: its name is not valid UTF-8" in w for w in report.warnings)
    assert find(mem, "platypus") and not find(mem, "wombat")
