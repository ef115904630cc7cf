"""A session's start as an agent meets it: `memd context --hook` run as the host runs it,
against a real daemon (or none, a starting one, a hung one) on workspaces written as
agents write them (tests/data/workspaces: session dumps, briefs, CRITICAL rules, flushed
turns). Every rule its owner marked is shown, nothing twice, no bullet without its
parent, a block with the line that introduces it; the answer always comes, and the same
one with or without the daemon."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench.session_start_bench import parent_line

WORKSPACES = Path(__file__).parent / "data" / "workspaces"
NOW = "2026-11-27T09:00:00"
_CITED = re.compile(r"\(((?:[^()]+?)#L(\d+)(?:-L\d+)?)\)\s*$")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_MARKED = re.compile(r"\b(?:CRITICAL|IMPORTANT|ALWAYS|NEVER)\b|^\s*(?:[-*]\s+)?\*\*[^*]+[.!]\*\*")


def start_hook(
    config: Path, cwd: Path, *args: str, now: str = NOW, budget: str = "60"
) -> subprocess.CompletedProcess:
    """`memd context --hook` fed what Claude Code sends at a session's start; the budget
    past the daemon's share is long, so a loaded machine never changes the route taken."""
    stdin = json.dumps({"session_id": "s-1", "transcript_path": "", "cwd": str(cwd),
                        "hook_event_name": "SessionStart", "source": "startup"})  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(config), "context", "--hook",
         "--now", now, *args],
        input=stdin, capture_output=True, text=True, timeout=90,
        env={**os.environ, "HOME": str(config.parent), "MEMD_HOOK_BUDGET_S": budget},
    )  # fmt: skip


def memd(config: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(config), *args],
        capture_output=True, text=True, timeout=90,
        env={**os.environ, "HOME": str(config.parent), "MEMD_HOOK_BUDGET_S": "60"},
    )  # fmt: skip


def copy_workspace(name: str, ws) -> None:
    shutil.copytree(WORKSPACES / name, ws.root, dirs_exist_ok=True)


def indexed(d) -> None:
    d.wait_for(lambda: d.call("status")["files"] > 0 and not d.call("status").get("indexing"),
               timeout=30, what="the first index pass")  # fmt: skip


def routes(state: Path) -> list[dict]:
    lines = (state / "hooks.log").read_text().splitlines()
    return [json.loads(line) for line in lines]


def shown_lines(text: str) -> list[tuple[str, int, str]]:
    """Each bullet shown: its file, first line and text without the citation."""
    out = []
    for line in text.splitlines():
        if line.lstrip().startswith("- ") and (m := _CITED.search(line)):
            out.append((m.group(1).split("#")[0], int(m.group(2)), line[: m.start()].strip()))
    return out


@pytest.mark.parametrize("name", ["ops", "research", "home"])
def test_an_agent_workspace_starts_with_its_rules_once_and_whole(name, serve, ws):
    copy_workspace(name, ws)
    d = serve()
    indexed(d)
    out = start_hook(d.config_path, ws.root)
    assert out.returncode == 0 and out.stderr == ""
    text = out.stdout
    assert text.rstrip().endswith("(memd: answered by the daemon)")
    core = (ws.root / "MEMORY.md").read_text().splitlines()
    shown = shown_lines(text)
    cited = {(path, line) for path, line, _ in shown}
    # Every line its owner marked (CRITICAL, NEVER, ALWAYS, IMPORTANT, a bold rule).
    marked = [n for n, line in enumerate(core, 1)
              if _MARKED.search(line) and not line.startswith("#")]  # fmt: skip
    assert marked, "the fixture marks its rules"
    for n in marked:
        assert ("MEMORY.md", n) in cited, (n, core[n - 1], text)
    # Nothing twice: no line cited twice, no text said twice.
    starts = [(path, line) for path, line, _ in shown]
    assert len(starts) == len(set(starts)), text
    said = [re.sub(r"^\[[^\]]+\]\s*", "", t) for _, _, t in shown]
    assert len(said) == len(set(said)), text
    # No orphan: a nested bullet of MEMORY.md comes under its parent.
    for path, n, _ in shown:
        if path == "MEMORY.md" and (parent := parent_line(core, n)) is not None:
            assert ("MEMORY.md", parent) in cited, (n, text)
            assert text.index(f"(MEMORY.md#L{parent})") < text.index(f"(MEMORY.md#L{n})")
    # Lines shown as written: a bold sentence gains no colon, a bold name keeps its own.
    for path, n, said in shown:
        if path == "MEMORY.md" and f"(MEMORY.md#L{n})" in text and "open task" not in said:
            assert said.removeprefix("- ") == _LIST_MARK.sub("", core[n - 1]).strip(), said
    # The workspace is the session's folder: no "About <workspace>" part.
    assert "About " not in text
    # A block is shown whole under the line that introduces it, or not at all.
    for fence in re.findall(r"^\s*```", "\n".join(core), re.M)[:1]:
        assert text.count(fence.strip()) % 2 == 0


def test_a_flush_heavy_day_keeps_the_notes_people_wrote(serve, ws):
    """Six flushes on one day take one line of their requests; the previous days' notes
    (the demo next Thursday, the pricing decision) stay; no answers, no transcript paths."""
    copy_workspace("ops", ws)
    d = serve()
    indexed(d)
    text = start_hook(d.config_path, ws.root).stdout
    assert "The demo for Northwind is next Thursday" in text
    assert "Decision: pricing stays at 49 EUR per seat" in text
    assert "answered:" not in text and ".jsonl" not in text
    recent = text.split("Recent notes:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    turns = [line for line in recent if "in sessions, asked:" in line]
    assert len(turns) == 1 and 4 * len(turns) <= len(recent), recent
    assert "summarise the incident channel" in turns[0]  # the newest request first


def test_about_a_project_only_says_what_is_not_said_above(serve, ws, tmp_path):
    ws.write(
        "MEMORY.md",
        "# Memory\n\n- The storefront runs on Postgres 16 and deploys on Tuesdays.\n"
        "- Invoices are generated by the billing service at month end.\n",
    )
    ws.write("memory/storefront.md", "# Storefront\n\nThe storefront search moves to "
             "Meilisearch in Q1.\n")  # fmt: skip
    for n, topic in enumerate(["billing exports", "the on-call rota", "hiring plans"]):
        ws.write(f"memory/topic-{n}.md", f"# Topic\n\nNotes about {topic}, nothing else.\n")
    d = serve()
    indexed(d)
    shop = tmp_path / "storefront"
    shop.mkdir()
    text = start_hook(d.config_path, shop).stdout
    assert "About storefront:" in text, text
    about = text.split("About storefront:\n", 1)[1].split("\n\n", 1)[0]
    assert "Meilisearch" in about and "MEMORY.md" not in about  # shown above already
    assert text.count("Postgres 16") == 1


def test_a_line_that_introduces_a_block_keeps_it_or_goes_whole(serve, ws):
    scene = "```yaml\nscene: planning\nowner: priya\nsteps: [brief, outline, review]\n```\n"
    ws.write("MEMORY.md", f"# Memory\n\n- We keep the planning scene like this:\n\n{scene}")
    d = serve()
    indexed(d)
    text = start_hook(d.config_path, ws.root).stdout
    assert "- We keep the planning scene like this: (MEMORY.md#L3)\n  ```yaml\n" in text
    assert "  steps: [brief, outline, review]\n  ```" in text
    tight = start_hook(d.config_path, ws.root, "--budget", "50").stdout
    assert "planning scene" not in tight and "steps:" not in tight


def test_recall_keeps_a_list_items_table(serve, ws):
    ws.write(
        "memory/rollout.md",
        "# Rollout\n\n- The rollout order for the billing cutover:\n\n"
        "| step | owner | day |\n|---|---|---|\n| freeze writes | Sam | Mon |\n"
        "| copy ledgers | Ana | Tue |\n",
    )
    d = serve()
    indexed(d)
    out = memd(d.config_path, "recall", "what is the rollout order for the billing cutover")
    assert "\n  | freeze writes | Sam | Mon |\n  | copy ledgers | Ana | Tue |" in out.stdout


def test_a_starting_daemon_never_leaves_the_session_without_memory(serve, ws):
    copy_workspace("ops", ws)
    d = serve()
    indexed(d)
    assert d.stop() == 0
    d.start(wait=False)  # answered in its first seconds: by it, or by the index beside it
    outs = [start_hook(d.config_path, ws.root) for _ in range(3)]
    d.wait_ready()
    for out in outs:
        assert "CRITICAL: Never run `terraform apply`" in out.stdout, out
        routed = r"\(memd: (answered by the daemon|read from the index on disk)"
        assert re.search(routed, out.stdout), out.stdout
    logged = routes(d.config_path.parent / "state")[-3:]
    assert [e["route"] for e in logged] and all("error" not in e for e in logged)


def test_a_hung_daemon_is_passed_over_for_the_index_on_disk(serve, ws):
    copy_workspace("home", ws)
    d = serve()
    indexed(d)
    d.proc.send_signal(signal.SIGSTOP)
    try:  # the daemon's share of 20 s is 9.3 s; the index has the rest, however loaded
        out = start_hook(d.config_path, ws.root, budget="20")
    finally:
        d.proc.send_signal(signal.SIGCONT)
    assert "ALWAYS confirm appointments with Priya" in out.stdout
    assert "(memd: read from the index on disk (the daemon did not answer within" in out.stdout
    [last] = routes(d.config_path.parent / "state")[-1:]
    assert last["route"] == "index" and "did not answer" in last["why"]


def test_the_same_answer_with_or_without_the_daemon(serve, ws):
    """Byte for byte, for the same index and --now: context and recall."""
    copy_workspace("research", ws)
    d = serve()
    indexed(d)
    asks = [
        ("context", "--cwd", str(ws.root.parent / "harbor-logistics"), "--now", NOW),
        ("context", "--cwd", str(ws.root), "--now", NOW),
        ("recall", "what does the Eurostat API limit us to", "--now", NOW),
        ("recall", "when is the Harbor brief due", "--now", NOW),
    ]
    with_daemon = [json.loads(memd(d.config_path, *a, "--json").stdout) for a in asks]
    assert d.stop() == 0
    without = [json.loads(memd(d.config_path, *a, "--json").stdout) for a in asks]
    assert [a["route"] for a in with_daemon] == ["daemon"] * 4
    assert [a["route"] for a in without] == ["index"] * 4
    for one, other in zip(with_daemon, without, strict=True):
        assert one["text"] == other["text"]
    assert all(a["text"] for a in with_daemon)


def test_without_a_readable_index_memory_md_as_written(tmp_path):
    """No daemon and an index that cannot be read: MEMORY.md as written, its marked rules
    first, a nested bullet with its parent, a code block whole; the route said."""
    root = tmp_path / "ws"
    shutil.copytree(WORKSPACES / "ops", root)
    state = tmp_path / "state"
    state.mkdir()
    (state / "index-default.sqlite").write_bytes(b"not a database" * 100)
    config = tmp_path / "memd.yaml"
    config.write_text(f"workspace: {root}\nstate_dir: {state}\nsocket: {tmp_path / 's.sock'}\n"
                      "embeddings: {provider: none}\n")  # fmt: skip
    out = start_hook(config, root)
    text = out.stdout
    assert "(memd: MEMORY.md as written (no daemon is running); no notes or search)" in text
    assert "- CRITICAL: Never run `terraform apply`" in text and "(MEMORY.md#L4)" in text
    assert "- Payments workers run on the `pay-*` nodes: (MEMORY.md#L18-L20)\n  - restart" in text
    assert "```bash\nmake release TAG=vX.Y.Z\n./scripts/promote.sh staging prod\n```" in text
    [last] = routes(state)[-1:]
    assert last["route"] == "text" and "could not be read" in last["why"]
    assert (state / "index-default.sqlite").read_bytes() == b"not a database" * 100  # untouched


def _niceness(pid: int) -> dict[int, int]:
    """Each thread of a process and its niceness (Linux's /proc)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            out[int(task.name)] = int(fields[16])
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread niceness")
def test_a_daemon_embedding_answers_hooks_first(serve, ws, embed_server):
    """A back-fill's batch runs niced (requests get the processors first on a busy
    machine), and context and recall are answered by the daemon while it is in flight,
    from its start and across a reload of its config."""
    copy_workspace("ops", ws)
    for i in range(40):
        ws.write(f"memory/2026-10-{i % 28 + 1:02d}-n{i}.md", f"# N{i}\n\n- note {i} on pagers\n")
    embed_server.delay = 120  # every embedding request is held: the batch stays in flight
    d = serve(f"embeddings: {{provider: openai, model: concepts-1, base_url: {embed_server.url},"
              " retries: 0, timeout_s: 150, debounce_ms: 0, interim: false}\n")  # fmt: skip
    d.wait_for(lambda: embed_server.requests > 0, timeout=60, what="a back-fill batch sent")
    niced = d.wait_for(lambda: [t for t, n in _niceness(d.proc.pid).items() if n >= 10],
                       timeout=30, what="a niced thread")  # fmt: skip
    assert d.proc.pid not in niced  # the loop that takes requests is not
    _answered_by_the_daemon(d, ws)
    assert embed_server.texts == []  # no batch came back meanwhile
    assert d.call("status")["embeddings"] == "embedding"
    # Reloading a changed config while the batch is still held: the new workspace answers.
    tmp = d.config_path.with_suffix(".tmp")
    tmp.write_text(d.config_path.read_text() + "search: {max_results: 5}\n")
    os.replace(tmp, d.config_path)
    d.proc.send_signal(signal.SIGHUP)
    d.wait_for(lambda: '"config_reloaded"' in d.log(), timeout=30, what="the reload")
    _answered_by_the_daemon(d, ws)
    assert embed_server.texts == []  # the old batch still held, the new one too


def _answered_by_the_daemon(d, ws) -> None:
    """Context and recall, as the host runs them, answered by the daemon itself."""
    context = start_hook(d.config_path, ws.root)
    recall = subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(d.config_path), "recall", "--hook",
         "--now", NOW], input=json.dumps({"prompt": "who may run terraform apply"}),
        capture_output=True, text=True, timeout=90,
        env={**os.environ, "HOME": str(d.config_path.parent), "MEMD_HOOK_BUDGET_S": "60"},
    )  # fmt: skip
    assert "CRITICAL: Never run `terraform apply`" in context.stdout
    assert "terraform apply" in recall.stdout
    assert "(memd: answered by the daemon)" in context.stdout
    assert "(memd: answered by the daemon)" in recall.stdout


def test_workspaces_written_by_others_start_with_every_rule_once_and_whole():
    """bench/fixtures (a German practice, a freelancer's terse notes, a reporter's desk,
    a game studio, and the review's three workspaces by another author): every marked
    rule shown, nothing twice, no orphan bullet, no line cut, turns at most a quarter of
    the recent notes."""
    from bench.session_start_bench import evaluate

    found = evaluate()
    assert len(found) == 7
    for name, outcome in found.items():
        failed = {k: v for k, v in outcome.items() if k not in ("tokens", "passed")}
        assert failed == {}, (name, failed)


def test_a_brief_changed_lately_says_what_is_coming_up(serve, ws):
    """A note without a date in its name (a brief) is read, as of the day it last
    changed, for the days it names ahead; one untouched for months is not."""
    ws.write("MEMORY.md", "# Memory\n\n- The owner likes short answers.\n")
    ws.write("memory/2026-11-26.md", "# 2026-11-26\n\n- Sent the invoice to Kettle.\n")
    ws.write("memory/briefs/limiter.md", "# Brief\n\nDeliverables due 11 December: a "
             "design note and a benchmark.\n")  # fmt: skip
    ws.write("memory/briefs/old.md", "# Old brief\n\nThe audit is due 9 December.\n")
    lately = dt.datetime(2026, 11, 25, 12).timestamp()
    months = dt.datetime(2026, 8, 1, 12).timestamp()
    os.utime(ws.root / "memory/briefs/limiter.md", (lately, lately))
    os.utime(ws.root / "memory/briefs/old.md", (months, months))
    d = serve()
    indexed(d)
    text = start_hook(d.config_path, ws.root).stdout
    coming = text.split("Coming up:\n", 1)[1].split("\n\n", 1)[0]
    assert "[2026-12-11] Deliverables due 11 December: a design note and a benchmark." in coming
    assert "(memory/briefs/limiter.md#L3)" in coming
    assert "audit" not in text
