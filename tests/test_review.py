"""Memory that tends itself (issue 21): review proposes promotions, conflicts and duplicates;
applying only appends, or changes memd's own key lines, and never a word a person wrote."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

from memd.embed.providers import local_available
from memd.errors import InvalidParams
from memd.memory import Memory
from memd.review.review import Note, review
from memd.review.statements import Statement, statements
from memd.review.updates import find_updates
from memd.serve.methods import call
from memd.serve.reviews import last_due

DAILY = {
    "memory/2026-03-03.md": "# 2026-03-03\n\n## Ops\n- Lunch with Ana at the noodle bar.\n"
    "- Decision: we keep application logs for 30 days.\n",
    "memory/2026-03-09.md": "# 2026-03-09\n\n## Ops\n- Deploy target is production now.\n"
    "- Ran 5 km before work.\n- Decision: we keep application logs for 30 days.\n"
    "- What time is the retro?\n",
}
CORE = (
    "# Memory\n\n## Team\n- **Tom Schreiber**: platform lead\n- Releases go out on Tuesdays.\n"
    "- The deploy target is staging.\n"
)


def rpc(memory, method, **params):
    return call(lambda name: memory, method, params)


@pytest.fixture
def notes(ws):
    ws.write("MEMORY.md", CORE)
    for rel, text in DAILY.items():
        ws.write(rel, text)
    return ws


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.md"))}


# -- reading notes -----------------------------------------------------------------------


def test_statements_are_lines_with_their_citation_and_day():
    text = (
        "# 2026-03-03\n\n## Decisions\n- [x] We picked Postgres for billing.\n\n"
        "```\n- not a statement in code\n```\n**Caroline:** I've been a vegetarian for ten years.\n"
        "- **editor**: helix <!-- memd:key -->\n"
    )
    found = statements("memory/2026-03-03.md", text, "2026-03-03")
    assert [(s.line, s.heading, s.text, s.speaker, s.key) for s in found] == [
        (4, "Decisions", "We picked Postgres for billing.", None, None),
        (9, "Decisions", "I've been a vegetarian for ten years.", "Caroline", None),
        (10, "Decisions", "helix", None, "editor"),
    ]
    assert found[0].citation == "memory/2026-03-03.md#L4"


def updates_between(older: str, newer: str) -> list:
    """The updates found between two dated statements, the newer six days on."""
    a = Statement("memory/2026-03-03.md", 4, "2026-03-03", "Ops", older)
    b = Statement("memory/2026-03-09.md", 4, "2026-03-09", "Ops", newer)
    return find_updates([a, b], lambda s: s.date or "")


@pytest.mark.parametrize(
    ("older", "newer", "update"),
    [
        ("The deploy target is staging.", "Deploy target is production now.", True),
        ("Switched the CI provider to Jenkins.", "The CI provider is now Buildkite.", True),
        ("Dana is the team lead for payments.", "Omar is the team lead for payments.", True),
        ("We use Redis for sessions.", "We no longer use Redis for sessions.", True),
        ("The deploy target is staging.", "The deploy target is staging-eu now.", True),
        ("Logs are kept 30 days.", "Log retention: 14 days.", True),  # no change word
        ("Proofing time is 45 minutes.", "Upped the proofing time from 45 to 60 minutes.", True),
        ("The deploy target is staging.", "The deploy target is still staging.", False),
        ("We use Redis for sessions.", "We use Postgres for billing.", False),
        ("Priya owns billing.", "Priya moved the billing cron to 02:00.", False),  # adds
        ("Ana's shift starts at 7.", "Ben's shift starts at 9.", False),  # two people
        ("Repo: api-gateway", "Repo: billing-worker", False),  # a label alone
        ("Printer A is in room 204.", "Printer B is in room 310.", False),  # two printers
    ],
)
def test_a_later_statement_updates_an_earlier_one_by_subject_and_value(older, newer, update):
    assert bool(updates_between(older, newer)) is update


@pytest.mark.parametrize(
    "newer",
    [
        "Flew KLM to Oslo for the client visit.",  # an event
        "What is the deploy target?",  # a question
        "- [ ] set the deploy target to production",  # a task
    ],
)
def test_events_tasks_and_questions_update_nothing(newer):
    older = "The deploy target is staging, flights go with SAS to Oslo."
    assert updates_between(older, newer) == []


# -- proposals -----------------------------------------------------------------------------


def test_a_conflict_s_reason_quotes_the_lines_where_no_value_was_read():
    """Where the words that differ are no value a person would name ("handles, service"
    for Ravi handing over to Jonas), the reason quotes both lines; a value read by its
    shape or as a name is named."""
    memory = "# Memory\n\n- Ravi handles the on-call rota for the payments service.\n"
    memory += "- Error tracking goes to Sentry.\n"
    later = "# 2026-11-16\n\n- From this week Jonas takes over the payments on-call rota "
    later += "from Ravi.\n- Error tracking now goes to GlitchTip.\n"
    found = review([Note("MEMORY.md", memory, None, True),
                    Note("memory/2026-11-16.md", later, "2026-11-16", False)])  # fmt: skip
    reasons = {p.citations[0]: p.reason for p in found if p.kind == "conflict"}
    assert "'Sentry'" in reasons["MEMORY.md#L4"] and "'GlitchTip'" in reasons["MEMORY.md#L4"]
    rota = reasons["MEMORY.md#L3"]
    assert "'Ravi handles the on-call rota for the payments service.'" in rota, rota
    assert "'From this week Jonas takes over the payments on-call rota from Ravi.'" in rota


def test_review_finds_the_changing_fact_and_the_recurring_decision(notes):
    found = review(
        [Note(rel, (notes.root / rel).read_text(), rel[7:17] if "/" in rel else None,
              rel == "MEMORY.md") for rel in ["MEMORY.md", *DAILY]]
    )  # fmt: skip
    kinds = {p.kind: p for p in found}
    assert set(kinds) == {"conflict", "promote"}
    conflict = kinds["conflict"]
    assert conflict.citations == ["MEMORY.md#L6", "memory/2026-03-09.md#L4"]
    assert conflict.newer == "memory/2026-03-09.md#L4"
    assert "'staging'" in conflict.reason and "'production'" in conflict.reason
    promote = kinds["promote"]
    assert promote.citations == ["memory/2026-03-03.md#L5", "memory/2026-03-09.md#L6"]
    assert "said on 2 days" in promote.reason and "a decision" in promote.reason
    assert promote.text.endswith("(memory/2026-03-09.md#L6)")
    texts = " ".join(p.text for p in found)
    assert "noodle" not in texts and "Ran 5 km" not in texts and "retro" not in texts


def test_what_memory_md_already_says_is_not_proposed_in_words(notes):
    notes.write("MEMORY.md", CORE + "- We keep application logs for 30 days.\n")
    with Memory_for(notes) as memory:
        kinds = [p["kind"] for p in rpc(memory, "memory_review")["proposals"]]
    assert kinds == ["conflict"]


def test_what_memory_md_already_says_is_not_proposed_in_meaning(ws, tmp_path, embed_server):
    ws.write("MEMORY.md", "# Memory\n- We chose Postgres as the main database.\n")
    ws.write("memory/2026-03-03.md", "# 2026-03-03\n- Decision: select postgresql for storage.\n")
    with Memory_for(ws) as plain:
        [proposal] = rpc(plain, "memory_review")["proposals"]
    assert proposal["kind"] == "promote"  # by words alone it looks new
    openai = {"provider": "openai", "model": "concepts-1", "base_url": embed_server.url}
    with Memory_for(ws, embeddings=openai, state_dir=str(tmp_path / "s2")) as memory:
        assert rpc(memory, "memory_review")["proposals"] == []


def test_a_review_embeds_a_statement_once_even_across_a_restart(ws, tmp_path, embed_server):
    """The statements a review compares by meaning are kept in the embedding cache: with
    the local model, embedding MEMORY.md's at each start took 19.5 s of CPU."""
    ws.write("MEMORY.md", "# Memory\n- We chose Postgres as the main database.\n")
    ws.write("memory/2026-03-03.md", "# 2026-03-03\n- Decision: select postgresql for storage.\n")
    # With its size given, the model need not embed a text at start to learn it.
    openai = {"provider": "openai", "model": "concepts-1", "base_url": embed_server.url,
              "dimensions": 64}  # fmt: skip
    state = str(tmp_path / "s")
    said = ["We chose Postgres as the main database.", "Decision: select postgresql for storage."]
    with Memory_for(ws, embeddings=openai, state_dir=state) as memory:
        assert rpc(memory, "memory_review")["proposals"] == []
    assert all(embed_server.texts.count(text) == 1 for text in said), embed_server.texts
    embed_server.texts.clear()
    with Memory_for(ws, embeddings=openai, state_dir=state) as memory:  # a restart
        assert rpc(memory, "memory_review")["proposals"] == []  # the same answer, from the cache
        ws.write(
            "MEMORY.md", "# Memory\n- We chose Postgres as the main database.\n- Ship on Fridays.\n"
        )
        assert rpc(memory, "memory_review")["proposals"] == []
    assert [t for t in embed_server.texts if t in said or "Fridays" in t] == ["Ship on Fridays."]


def Memory_for(ws, **raw):
    from memd.configfile import parse_config

    raw = {"workspace": str(ws.root), "state_dir": str(ws.root.parent / "state"),
           "embeddings": {"provider": "none"}, **raw}  # fmt: skip
    return Memory(parse_config(raw, env={"HOME": str(ws.root.parent)}))


def test_bad_review_params(notes):
    with Memory_for(notes) as memory:
        with pytest.raises(InvalidParams, match="kind"):
            rpc(memory, "memory_review", kind="merge")
        with pytest.raises(InvalidParams, match="since"):
            rpc(memory, "memory_review", since="last week")
        with pytest.raises(InvalidParams, match="ids"):
            rpc(memory, "memory_review_apply")
        since = rpc(memory, "memory_review", since="2026-03-09")["proposals"]
        assert {p["kind"] for p in since} == {"conflict", "promote"}
        assert rpc(memory, "memory_review", since="2026-03-10")["proposals"] == []
        only = rpc(memory, "memory_review", kind=["conflict"])["proposals"]
        assert [p["kind"] for p in only] == ["conflict"]


# -- applying ------------------------------------------------------------------------------


def test_apply_appends_with_provenance_once_and_changes_nothing_else(notes):
    before = snapshot(notes.root)
    with Memory_for(notes) as memory:
        ids = {p["kind"]: p["id"] for p in rpc(memory, "memory_review")["proposals"]}
        first = rpc(memory, "memory_review_apply", ids=[ids["promote"], ids["conflict"]])
        again = rpc(memory, "memory_review_apply", ids=[ids["promote"]])
    after = snapshot(notes.root)
    assert {k: v for k, v in after.items() if k != "MEMORY.md"} == {
        k: v for k, v in before.items() if k != "MEMORY.md"
    }
    core = after["MEMORY.md"].decode()
    assert core.startswith(CORE)  # every byte a person wrote, as it was
    today = dt.date.today().isoformat()
    assert core[len(CORE) :] == (
        f"\n## Promoted {today}\n\n"
        "- Decision: we keep application logs for 30 days. (memory/2026-03-09.md#L6)\n"
        "- Deploy target is production now. (memory/2026-03-09.md#L4; was: "
        "MEMORY.md#L6)\n"
    )
    assert [a["duplicate"] for a in first["applied"]] == [False, False]
    assert first["applied"][0]["path"] == "MEMORY.md" and first["applied"][0]["start_line"] == 10
    assert again["applied"][0]["duplicate"] is True
    assert snapshot(notes.root) == after


def test_a_conflict_with_a_stored_key_stores_the_newer_value(notes, tmp_path):
    with Memory_for(notes) as memory:
        memory.store("deploy target", "staging")
        notes.write("memory/2026-03-09.md", DAILY["memory/2026-03-09.md"], dedent=False)
        proposals = rpc(memory, "memory_review", kind="conflict")["proposals"]
        [keyed] = [p for p in proposals if p["action"] == "store"]
        assert keyed["key"] == "deploy target" and keyed["text"] == "production"
        before = (notes.root / "MEMORY.md").read_text()
        [applied] = rpc(memory, "memory_review_apply", ids=[keyed["id"]])["applied"]
    assert applied["action"] == "store" and applied["path"] == "MEMORY.md"
    after = (notes.root / "MEMORY.md").read_text()
    assert after == before.replace(
        "- **deploy target**: staging <!-- memd:key -->",
        "- **deploy target**: production <!-- memd:key -->",
    )
    assert "- **Tom Schreiber**: platform lead\n" in after  # a person's look-alike, untouched


def test_dismissed_stays_dismissed_until_a_cited_line_changes(notes):
    with Memory_for(notes) as memory:
        [conflict] = rpc(memory, "memory_review", kind="conflict")["proposals"]
        assert rpc(memory, "memory_review_apply", dismiss=[conflict["id"]])["dismissed"]
    with Memory_for(notes) as memory:  # a restart: the state folder remembers
        answer = rpc(memory, "memory_review", kind="conflict")
        assert answer["proposals"] == [] and answer["dismissed"] == 1
        notes.write("memory/2026-03-09.md",
                    DAILY["memory/2026-03-09.md"].replace("production", "canary"))  # fmt: skip
        [back] = rpc(memory, "memory_review", kind="conflict")["proposals"]
    assert back["id"] != conflict["id"] and "'canary'" in back["reason"]
    state = notes.root.parent / "state" / "review-default.json"
    assert state.stat().st_mode & 0o777 == 0o600
    assert conflict["id"] in json.loads(state.read_text())["dismissed"]


def test_applying_an_id_whose_text_changed_writes_nothing(notes):
    with Memory_for(notes) as memory:
        [promote] = rpc(memory, "memory_review", kind="promote")["proposals"]
        notes.write("memory/2026-03-09.md",
                    DAILY["memory/2026-03-09.md"].replace("30 days", "90 days"))  # fmt: skip
        before = snapshot(notes.root)
        [result] = rpc(memory, "memory_review_apply", ids=[promote["id"]])["applied"]
    assert "a cited line changed" in result["error"]
    assert snapshot(notes.root) == before


def test_the_command_line(notes, tmp_path):
    config = tmp_path / "memd.yaml"
    config.write_text(
        f"workspace: {notes.root}\nstate_dir: {tmp_path / 'st'}\nembeddings: {{provider: none}}\n"
    )

    def memd(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "memd", "--config", str(config), *args],
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    listed = memd("review")
    assert listed.returncode == 0, listed.stderr
    assert "conflict" in listed.stdout and "staging" in listed.stdout
    assert "2 proposals" in listed.stderr
    pid = json.loads(memd("review", "--json", "--kind", "promote").stdout)["proposals"][0]["id"]
    applied = memd("review", "--apply", pid)
    assert applied.returncode == 0 and f"{pid}  appended to MEMORY.md:10" in applied.stdout
    assert "(already applied)" in memd("review", "--apply", pid).stdout
    unknown = memd("review", "--apply", "000000000000")
    assert unknown.returncode == 1 and "no such proposal" in unknown.stdout


# -- the daily run ----------------------------------------------------------------------------


def test_when_the_review_is_due():
    zone = dt.timezone(dt.timedelta(hours=2))
    at_night = dt.datetime(2026, 3, 9, 2, 59, tzinfo=zone)
    assert last_due(at_night, "03:00") == dt.datetime(2026, 3, 8, 3, 0, tzinfo=zone)
    assert last_due(at_night.replace(minute=0, hour=3), "03:00").day == 9


def test_the_daemon_reviews_on_schedule_and_says_what_waits(notes, serve):
    # No review yet: the one missed at 03:00 is made up after the first index pass.
    d = serve("review: {at: '03:00'}\n")
    status = d.wait_for(lambda: (d.call("status").get("review") or {}).get("reviewed_at")
                        and d.call("status"), timeout=20, what="the first review")  # fmt: skip
    review_info = status["review"]
    assert review_info["waiting"] == 2 and review_info["state"] == "idle"
    assert "T03:00" in review_info["next_at"]
    prompt = d.call("memory_flush_prompt")
    assert prompt["review_waiting"] == 2 and "2 memory review proposals wait" in prompt["user"]
    [conflict] = d.call("memory_review", kind="conflict")["proposals"]
    d.call("memory_review_apply", dismiss=[conflict["id"]])
    assert d.call("status")["review"]["waiting"] == 1


def test_a_large_review_in_the_daemon_runs_in_a_process_of_its_own(notes, monkeypatch):
    import memd.review.reviewer as reviewer

    with Memory_for(notes) as memory:
        here = rpc(memory, "memory_review")["proposals"]
        isolated = reviewer.Reviewer(memory.workspace, lambda: memory.journal, memory.config,
                                     memory.embedder, isolated=True)  # fmt: skip
        monkeypatch.setattr(reviewer, "ISOLATE_FROM_CHARS", 0)
        spawned = []
        real = reviewer.multiprocessing.get_context

        def counting(method):
            spawned.append(method)
            return real(method)

        monkeypatch.setattr(reviewer.multiprocessing, "get_context", counting)
        there = isolated.run().as_dict()["proposals"]
    assert spawned == ["spawn"] and there == here and len(here) == 2


def test_lines_said_twice_are_duplicates_and_only_memds_own_is_removed(ws):
    core = (
        "# Memory\n- Deployments go out on Tuesdays and Wednesdays, never on Fridays.\n"
        "- Deployments go out on Tuesdays and Wednesdays, and never on Fridays.\n"
    )
    ws.write("MEMORY.md", core)
    with Memory_for(ws) as memory:
        memory.store("db", "main database is Postgres 16 for billing")
        memory.store("database", "main database is Postgres 16 for billing", category="prefs")
        found = rpc(memory, "memory_review", kind="duplicate")["proposals"]
        by_action = {p["action"]: p for p in found}
        assert set(by_action) == {"none", "forget"}
        assert by_action["none"]["citations"] == ["MEMORY.md#L2", "MEMORY.md#L3"]
        forget = by_action["forget"]
        assert forget["key"] == "database" and forget["citations"][-1].startswith("memory/prefs.md")
        [refused] = rpc(memory, "memory_review_apply", ids=[by_action["none"]["id"]])["applied"]
        assert "for you to act on" in refused["error"]
        [done] = rpc(memory, "memory_review_apply", ids=[forget["id"]])["applied"]
        assert done["action"] == "forget" and done["paths"] == ["memory/prefs.md"]
        assert [e.key for e in memory.list().entries] == ["db"]
    assert (ws.root / "MEMORY.md").read_text().startswith(core)  # the person's lines as they were


@pytest.mark.skipif(not local_available(), reason="memd[local] is not installed")
def test_a_due_review_waits_for_the_vector_back_fill_with_the_local_model(make_config, monkeypatch):
    """Its check by meaning would take the cores the back-fill needs (19.5 s of CPU at a
    first start): while vectors are back-filled it waits, at most half an hour."""
    import asyncio

    from memd.serve import reviews

    filling = [True]
    with Memory(make_config(embeddings={"provider": "local"})) as memory:
        schedule = reviews.ReviewSchedule(
            memory, memory.config, asyncio.Event(), asyncio.Event(), lambda: filling[0]
        )
        assert (
            schedule._held() and schedule.info()["state"] == "waiting for the embedding back-fill"
        )
        filling[0] = False
        assert not schedule._held()
        filling[0] = True
        monkeypatch.setattr(reviews, "_HOLD_S", 0.0)
        assert not schedule._held()  # held long enough: it runs all the same
    with Memory(make_config(embeddings={"provider": "none"})) as memory:
        schedule = reviews.ReviewSchedule(
            memory, memory.config, asyncio.Event(), asyncio.Event(), lambda: True
        )
        assert not schedule._held()  # keyword only: nothing competes for the cores
