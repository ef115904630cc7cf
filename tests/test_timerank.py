import dataclasses
import datetime as dt
import json
import subprocess
import sys
from zoneinfo import ZoneInfo

import pytest

from memd.config import Search
from memd.errors import InvalidParams
from memd.memory import Memory
from memd.search.ranking import Candidate
from memd.search.request import SearchRequest, parse_now
from memd.search.timerank import (
    adjust,
    asks_only_when,
    newer_first,
    prefer,
    same_statement,
    statement,
    window_factor,
    window_filter,
)
from memd.search.timewords import read_time
from memd.serve.methods import call
from memd.store.rows import Hit

NOW = "2026-03-18T09:30:00"  # a Wednesday


def cand(chunk_id, score, date=None, source=None, text=""):
    source = source or ("daily" if date else "core")
    c = Candidate(Hit(chunk_id, f"p{chunk_id}", 1, 1, "", text, source, date, 0))
    c.score = score
    return c


STAGING = "# 2026-03-03\n- Lunch with Sam.\n- The deploy target is now staging."
PRODUCTION = "# 2026-03-09\n- The deploy target is now production.\n- Read about rust."


def test_newer_first_among_near_duplicates():
    """Two notes stating one fact at near-equal scores: the newer first, scores in order."""
    old = cand(1, 0.62, "2026-03-03", text=STAGING)
    new = cand(2, 0.60, "2026-03-09", text=PRODUCTION)
    newer_first([old, new], 0.1, "what is the deploy target")
    assert new.score > old.score >= 0.59


def test_near_equal_chunks_about_other_things_keep_their_order():
    old = cand(1, 0.62, "2026-03-03", text=STAGING)
    new = cand(2, 0.60, "2026-03-09", text="- Lunch with Sam.\n- The deploy went fine.")
    newer_first([old, new], 0.1, "what is the deploy target")
    assert (old.score, new.score) == (0.62, 0.60)


def test_a_clearly_better_older_answer_keeps_its_place():
    old = cand(1, 0.80, "2026-03-03", text=STAGING)
    new = cand(2, 0.60, "2026-03-09", text=PRODUCTION)
    newer_first([old, new], 0.1, "what is the deploy target")
    assert (old.score, new.score) == (0.80, 0.60)


def test_undated_chunks_are_not_reordered_by_date():
    core = cand(1, 0.62, text="- The deploy target is now staging.")
    new = cand(2, 0.60, "2026-03-09", text=PRODUCTION)
    newer_first([core, new], 0.1, "what is the deploy target")
    assert core.score == 0.62


def test_a_note_naming_a_day_ahead_comes_first_and_every_score_stays_within_one():
    """The preference for a note naming a day of a window ahead lifts its score; when that
    passes 1, every score is scaled alike: the same order, scores in [0, 1]."""
    named, plain, low = cand(1, 0.8), cand(2, 0.9), cand(3, 0.2)
    prefer([named, plain, low], {1})
    scores = [named.score, plain.score, low.score]
    assert max(scores) == pytest.approx(1.0) and min(scores) >= 0
    assert named.score > plain.score > low.score
    assert plain.score / low.score == pytest.approx(0.9 / 0.2)
    small = [cand(1, 0.4), cand(2, 0.5)]
    prefer(small, {1})
    assert [c.score for c in small] == pytest.approx([0.6, 0.5])  # nothing past 1: as is


def test_statement_is_the_line_about_what_was_asked():
    asked = {"deplo", "targe"}
    assert statement(STAGING, asked) == {"deplo", "targe", "stagi"}
    assert same_statement(statement(STAGING, asked), statement(PRODUCTION, asked))
    assert not same_statement({"deplo", "went", "fine"}, {"lunch", "sam"})


def test_adjust_prefers_the_window_and_notes_over_transcripts():
    reading = read_time("in March", dt.date(2026, 6, 1))
    inside, before, core = cand(1, 0.5, "2026-03-05"), cand(2, 0.5, "2026-02-01"), cand(3, 0.5)
    session = cand(4, 0.5, "2026-03-06", source="sessions")
    adjust([inside, before, core, session], reading, Search(newer_first=False))
    assert inside.score == pytest.approx(0.4 + 0.6 * 0.5)  # ordered first, not made strong
    assert inside.relevance == 0.0  # what decides strength is left alone
    assert before.score == pytest.approx(0.3)
    assert session.score == pytest.approx(0.7 * 0.9)
    # An undated note may hold a standing fact, but it was not written then: halfway.
    assert core.score == pytest.approx(0.4)


def test_time_words_that_match_no_found_note_weigh_on_none():
    """'last Saturday' asked of notes years old: nothing is from those days, so nothing
    loses its score (a threshold would otherwise drop every answer)."""
    reading = read_time("last Saturday", dt.date(2026, 6, 1))
    old = [cand(1, 0.5, "2023-05-08"), cand(2, 0.4, "2023-05-25")]
    adjust(old, reading, Search(newer_first=False))
    assert [c.score for c in old] == [0.5, 0.4]


def test_a_note_written_just_after_the_window_keeps_most_of_its_preference():
    """What happened on the 3rd is often written down on the 4th."""
    reading = read_time("on 3 May", dt.date(2026, 6, 1))
    assert window_factor("2026-05-03", reading, 0.7) == 1.0
    assert 0.85 < window_factor("2026-05-04", reading, 0.7) < 1.0
    assert window_factor("2026-05-20", reading, 0.7) == pytest.approx(0.7, abs=0.01)
    assert window_factor("2026-05-02", reading, 0.7) == 0.7


def test_parse_now_reads_iso_in_the_configured_zone():
    tokyo = ZoneInfo("Asia/Tokyo")
    clock = lambda: dt.datetime(2026, 1, 1, tzinfo=tokyo)  # noqa: E731
    assert parse_now("2026-03-18T23:30:00Z", clock) == dt.datetime(2026, 3, 19, 8, 30, tzinfo=tokyo)
    assert parse_now("2026-03-18T10:00", clock).tzinfo is tokyo
    assert parse_now("2026-03-18", clock).date() == dt.date(2026, 3, 18)
    assert parse_now(None, clock) == clock()
    with pytest.raises(InvalidParams) as err:
        parse_now("last tuesday", clock)
    assert err.value.param == "now"


def test_asks_only_when():
    assert asks_only_when("what did we do?") and asks_only_when("")
    assert not asks_only_when("which hotel did we book")
    # Generic verbs leave nothing to search for: the window is the answer.
    for only_when in ("what did we decide", "what happened", "summarize", "what did we work on",
                      "what did we talk about?", "我们讨论了什么", "发生了什么事情？"):  # fmt: skip
        assert asks_only_when(only_when), only_when
    assert not asks_only_when("我们讨论了数据库") and not asks_only_when("decide on the database")


def test_window_filter_stays_inside_since_and_until():
    reading = read_time("in March", dt.date(2026, 6, 1))
    assert window_filter(reading, None, None) == ("2026-03-01", "2026-03-31")
    assert window_filter(reading, "2026-03-10", None) == ("2026-03-10", "2026-03-31")
    assert window_filter(reading, None, "2026-02-28") is None


# -- through search ------------------------------------------------------------------------


@pytest.fixture
def trips(ws, make_config):
    ws.write("MEMORY.md", "# Memory\n\n## Stack\n- The main database is Postgres 16.\n")
    ws.write(
        "memory/2026-01-10.md", "# 2026-01-10\n\n## Travel\nBooked the Grand Hotel in Lisbon.\n"
    )
    ws.write("memory/2026-03-12.md", "# 2026-03-12\n\n## Travel\nBooked Hotel Adlon in Berlin.\n")
    ws.write("memory/2026-05-20.md", "# 2026-05-20\n\n## Travel\nBooked the Ritz hotel in Paris.\n")
    ws.write(
        "memory/2026-03-17.md",
        "# 2026-03-17\n\n## Standup\nReviewed the backlog.\n\n## Lunch\nRamen with Sam.\n",
    )
    planning = "# 2025-11-02\n\n## Planning\nThe last week of the quarter, week after week.\n"
    ws.write("memory/2025-11-02.md", planning)
    with Memory(make_config()) as m:
        m.index()
        yield m


def answer(memory, query, **kw):
    kw.setdefault("min_score", 0.0)
    kw.setdefault("now", NOW)
    return memory.search(SearchRequest(query, **kw)).as_dict()


def test_a_time_window_puts_that_times_note_first_and_says_so(trips):
    a = answer(trips, "which hotel did we book last week")
    assert a["results"][0]["path"] == "memory/2026-03-12.md"
    assert a["time"] == {"from": "2026-03-09", "to": "2026-03-15", "matched": "last week"}
    a = answer(trips, "which hotel did we book in January", now="2026-06-01")
    assert a["results"][0]["path"] == "memory/2026-01-10.md"
    assert a["time"]["matched"] == "January"


def test_without_time_words_the_answer_has_no_time(trips):
    assert "time" not in answer(trips, "hotel")


def test_time_words_are_not_searched_as_keywords(trips):
    """'last week' reads as days; a note that only says 'last week' is not found by it."""
    paths = [r["path"] for r in answer(trips, "hotel last week")["results"]]
    assert "memory/2025-11-02.md" not in paths
    off = Memory(dataclasses.replace(trips.config, search=Search(time_words=False)))
    with off:
        paths = [r["path"] for r in answer(off, "hotel last week")["results"]]
    assert "memory/2025-11-02.md" in paths


def test_an_undated_fact_still_answers_a_time_question(trips):
    paths = [r["path"] for r in answer(trips, "which database did we use last week")["results"]]
    assert paths[0] == "MEMORY.md"


def test_since_and_until_stay_hard_filters(trips):
    got = answer(trips, "hotel in March", until="2026-02-28")["results"]
    assert [r["path"] for r in got] == ["memory/2026-01-10.md"]


def test_a_question_about_only_a_time_lists_that_time(trips):
    a = answer(trips, "what did we do yesterday?")
    assert a["time"]["matched"] == "yesterday"
    assert [r["citation"] for r in a["results"]] == [
        "memory/2026-03-17.md#L1-L4",
        "memory/2026-03-17.md#L6-L7",
    ]
    assert answer(trips, "昨天")["results"][0]["path"] == "memory/2026-03-17.md"


def test_now_is_read_in_flush_timezone(ws, make_config):
    ws.write("memory/2026-03-18.md", "# 2026-03-18\n\n## Ops\nRotated the TLS certificates.\n")
    with Memory(make_config(flush={"timezone": "Asia/Tokyo"})) as m:
        m.index()
        a = answer(m, "certificates yesterday", now="2026-03-19T23:30:00Z")  # 20th in Tokyo
        assert a["time"]["from"] == "2026-03-19"
        a = answer(m, "certificates yesterday", now="2026-03-18T23:30:00Z")  # 19th in Tokyo
        assert a["time"]["from"] == "2026-03-18"
        assert a["results"][0]["path"] == "memory/2026-03-18.md"


def test_newer_statement_first_when_notes_disagree(ws, make_config):
    ws.write("memory/2026-03-03.md", "# 2026-03-03\n\n## Deploy\nThe deploy target is staging.\n")
    ws.write("memory/2026-03-09.md",
             "# 2026-03-09\n\n## Deploy\nThe deploy target is production now.\n")  # fmt: skip
    with Memory(make_config(search={"decay": False})) as m:
        m.index()
        got = answer(m, "what is the deploy target", now="2026-11-01")["results"]
        assert got[0]["path"] == "memory/2026-03-09.md"
        assert got[0]["score"] >= got[1]["score"]
    with Memory(make_config(search={"decay": False, "newer_first": False})) as m:
        got = answer(m, "what is the deploy target", now="2026-11-01")["results"]
        assert got[0]["path"] == "memory/2026-03-03.md"  # shorter chunk: BM25 prefers it


def test_a_narrow_window_admits_no_note_for_its_date_alone(memory, ws):
    """``narrow_window`` (what recall asks): the window narrows the question's matches; a
    note of last week that shares a word or two with the question stays below the floor.
    Without it the window's notes are not lifted either: a window narrows, it never
    vouches (their dates order them, their words decide their strength)."""
    week = {  # the week before NOW's
        "2026-03-09": "- Rolled back the prod deploy of 3.2.0: the migration locked a table.",
        "2026-03-10": "- Lunch with the design team.\n- Got the new laptops back from IT.",
        "2026-03-12": "- Prod database backups now run every six hours.",
        "2026-03-13": "- The deploy checklist moved to the wiki; Sam reviews it on Mondays.",
    }
    for day, note in week.items():
        ws.write(f"memory/{day}.md", f"# {day}\n\n{note}\n")
    memory.index()
    prompt = "why did the prod deploy get rolled back last week?"
    plain = memory.search(prompt, now=NOW, min_results=0).results  # strong only
    assert "memory/2026-03-09.md" in [r.path for r in plain]
    assert len(plain) < len(week)  # its dates lifted all four: now what they say decides
    narrow = memory.search(prompt, now=NOW, min_results=0, narrow_window=True).results
    assert [r.path for r in narrow] == ["memory/2026-03-09.md"]
    answers = [r for r in plain if r.path == "memory/2026-03-09.md"]
    assert narrow[0].score == answers[0].score  # the note that answers keeps its lift


def test_now_through_the_socket_methods(trips):
    a = call(lambda name: trips, "memory_search",
             {"query": "hotel last week", "now": NOW, "min_score": 0})  # fmt: skip
    assert a["time"]["to"] == "2026-03-15"
    with pytest.raises(InvalidParams) as err:
        call(lambda name: trips, "memory_search", {"query": "hotel", "now": "soon"})
    assert err.value.param == "now"


def test_cli_prints_how_it_read_the_time(trips, tmp_path):
    config = tmp_path / "cli.yaml"
    config.write_text(
        f"workspace: {trips.config.workspaces[0].path}\nstate_dir: {trips.config.state_dir}\n"
        "embeddings: {provider: none}\n"
    )
    args = [sys.executable, "-m", "memd", "--config", str(config), "search", "hotel last week",
            "--now", NOW]  # fmt: skip
    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "time: 'last week' read as 2026-03-09 to 2026-03-15" in out.stderr
    assert "memory/2026-03-12.md" in out.stdout.splitlines()[0]
    out = subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=60)
    assert json.loads(out.stdout)["time"]["matched"] == "last week"
