"""Newer facts first (issue 30, item 3): what the review found superseded ranks below what
replaced it and says so (``superseded_by``); the relation lives in the index, where
search reads it without importing the review."""

from __future__ import annotations

import datetime as dt

import apsw
import pytest

from memd.cli import format as fmt
from memd.config import Search
from memd.configfile import parse_config
from memd.memory import Memory
from memd.search.ranking import Candidate, select
from memd.search.superseded import SUPERSEDED, demote, mark_superseded
from memd.serve.methods import call
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


def test_after_a_review_the_replaced_fact_ranks_below_and_says_by_what(notes, serve):
    d = serve("review: {enabled: false}\n")
    before = d.wait_for(lambda: d.search(QUESTION), timeout=30, what="the index")
    assert ranked(before) == [OLDER, NEWER]  # words alone favour the titled section
    assert not any("superseded_by" in r for r in before)
    [conflict] = d.call("memory_review", kind="conflict")["proposals"]
    assert conflict["newer"].startswith(f"{NEWER}#L4")
    after = d.search(QUESTION)
    assert ranked(after) == [NEWER, OLDER]
    old = next(r for r in after if r["path"] == OLDER)
    assert old["superseded_by"] == conflict["newer"]
    assert "superseded_by" not in next(r for r in after if r["path"] == NEWER)
    # Another question that finds the old note finds it marked too.
    lunch = d.search("deploy target staging lunch")
    assert next(r for r in lunch if r["path"] == OLDER)["superseded_by"] == conflict["newer"]


def test_the_relation_follows_the_files_content_not_its_line_numbers(notes, serve):
    d = serve("review: {enabled: false}\n")
    d.wait_for(lambda: d.search(QUESTION), timeout=30, what="the index")
    d.call("memory_review")
    assert "superseded_by" in next(r for r in d.search(QUESTION) if r["path"] == OLDER)
    # Two lines come in above: line 4 now says something else, and is not marked.
    above = "## Deploy target\n- Coffee at nine.\n- Tea at ten.\n"
    notes.write(OLDER, NOTES[OLDER].replace("## Deploy target\n", above))
    d.call("reindex")

    def moved():
        old = [r for r in d.search(QUESTION) if r["path"] == OLDER]
        return old and old[0]["end_line"] == 7 and old

    [old] = d.wait_for(moved, timeout=30, what="the edit indexed")
    assert "superseded_by" not in old
    d.call("memory_review")  # the next review finds the statement where it now is
    old = next(r for r in d.search(QUESTION) if r["path"] == OLDER)
    assert old["superseded_by"].startswith(f"{NEWER}#L4")


def test_a_review_in_a_process_of_its_own_writes_through_the_owner(notes, monkeypatch):
    import memd.review.reviewer as reviewer

    with memory_for(notes) as memory:
        memory.index()
        isolated = reviewer.Reviewer(memory.workspace, lambda: memory.journal, memory.config,
                                     memory.embedder, isolated=True)  # fmt: skip
        monkeypatch.setattr(reviewer, "ISOLATE_FROM_CHARS", 0)
        isolated.run()
        old = next(r for r in memory.search(QUESTION, min_score=0).results if r.path == OLDER)
    assert old.superseded_by is not None and old.superseded_by.startswith(f"{NEWER}#L4")


def test_a_review_without_conflicts_clears_what_the_last_one_found(notes):
    with memory_for(notes) as memory:
        memory.index()
        call(lambda name: memory, "memory_review", {})
        assert any(r.superseded_by for r in memory.search(QUESTION, min_score=0).results)
        # A review that did not look for conflicts leaves what the last one found.
        call(lambda name: memory, "memory_review", {"kind": ["duplicate"]})
        assert any(r.superseded_by for r in memory.search(QUESTION, min_score=0).results)
        notes.write(NEWER, "# 2026-03-09\n\n## Ops\n- Ran 5 km before work.\n")
        memory.index()
        call(lambda name: memory, "memory_review", {})
        assert not any(r.superseded_by for r in memory.search(QUESTION, min_score=0).results)


def test_a_switched_queue_ranks_the_new_one_first(ws, serve):
    rabbit = "- Decided to use RabbitMQ for the invoice event queue instead of Kafka.\n"
    sqs = "- Switched the invoice event queue from RabbitMQ to AWS SQS to drop the broker upkeep.\n"
    ws.write("memory/2026-11-05.md", f"# 2026-11-05\n\n{rabbit}")
    ws.write("memory/2026-11-20.md", f"# 2026-11-20\n\n{sqs}")
    for rel in list(NOTES)[2:]:
        ws.write(rel, NOTES[rel])
    d = serve("review: {enabled: false}\n")
    question = "which queue do we use for invoice events"
    d.wait_for(lambda: d.search(question), timeout=30, what="the index")
    d.call("memory_review")
    found = [r for r in d.search(question) if r["path"].startswith("memory/2026-11-")]
    assert [r["path"] for r in found] == ["memory/2026-11-20.md", "memory/2026-11-05.md"]
    assert found[1]["superseded_by"].startswith("memory/2026-11-20.md#L")


# -- the parts ------------------------------------------------------------------------------


def hit(chunk_id: int, path: str, start: int, text: str, date: str = "2026-03-03") -> Hit:
    end = start + text.count("\n")
    return Hit(chunk_id, path, start, end, "", text, "daily", date, 1.0)


def test_a_superseded_chunk_goes_below_its_replacement_when_that_is_near():
    def scored(old_relevance: float, new_relevance: float) -> list:
        old = Candidate(hit(1, OLDER, 3, "## Ops\n- The deploy target is staging."),
                        relevance=old_relevance)  # fmt: skip
        new = Candidate(hit(2, NEWER, 3, "## Ops\n- The deploy target is now production.",
                            "2026-03-09"), relevance=new_relevance)  # fmt: skip
        old.superseded_by = f"{NEWER}#L4"
        plain = Search(decay=False, mmr=False, newer_first=False)
        return select([old, new], 5, 0.1, plain, dt.date(2026, 3, 10), demote)

    near = scored(0.65, 0.44)  # the replacement scores well under it: placed just below
    assert [r.path for r in near] == [NEWER, OLDER] and near[1].score == 0.4399
    assert near[1].as_dict()["superseded_by"] == f"{NEWER}#L4" and near[1].match == "strong"
    assert "superseded_by" not in near[0].as_dict()
    far = scored(0.9, 0.2)  # a poor match for the question: the old one keeps a share
    assert [r.path for r in far] == [OLDER, NEWER] and far[0].score == round(0.9 * SUPERSEDED, 4)
    alone = Candidate(hit(1, OLDER, 3, "x"), relevance=0.5, score=0.5, superseded_by="a#L1")
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


def test_the_human_output_says_what_replaced_a_result(capsys):
    result = {"path": OLDER, "start_line": 1, "end_line": 5, "score": 0.5, "snippet": "x",
              "heading": "", "source": "daily", "citation": f"{OLDER}#L1-L5", "match": "strong",
              "superseded_by": f"{NEWER}#L4"}  # fmt: skip
    fmt.search({"results": [result], "mode": "keyword", "index": {"stale": False}})
    assert f"(superseded by {NEWER}#L4)" in capsys.readouterr().out


# -- the store ------------------------------------------------------------------------------


def test_the_store_replaces_the_relation_wholesale_and_finds_it_by_chunk(tmp_path):
    store = SqliteStore.open(tmp_path / "i.sqlite")
    m = FileMeta(OLDER, "/w/" + OLDER, "/w/" + OLDER, "daily", "2026-03-03", 1, 1, "h", 6)
    with store.transaction():
        store.replace_file(m, chunk_rows(m, [Chunk(1, 3, "", "a\nb\nc", 3),
                                             Chunk(4, 6, "", "d\ne\nf", 3)]))  # fmt: skip
    ids = [i for i, _ in store.file_chunks(store.files()[OLDER].id)]
    rows = [Supersession(OLDER, 2, 2, "d1", "n#L1"), Supersession(OLDER, 5, 6, "d2", "n#L2"),
            Supersession(OLDER, 3, 4, "d3", "n#L3")]  # fmt: skip  # the last spans two chunks
    with store.transaction():
        store.replace_superseded(rows)
    assert store.superseded_in(ids) == {ids[0]: [rows[0]], ids[1]: [rows[1]]}
    with store.transaction():
        store.replace_superseded(rows[1:2])
    assert store.superseded_in(ids) == {ids[1]: [rows[1]]}
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
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 8
    assert list(store.files()) == ["MEMORY.md"]
    assert store.superseded_in([1]) == {}
    store.close()


def memory_for(ws, **raw):
    raw = {"workspace": str(ws.root), "state_dir": str(ws.root.parent / "state"),
           "embeddings": {"provider": "none"}, **raw}  # fmt: skip
    return Memory(parse_config(raw, env={"HOME": str(ws.root.parent)}))
