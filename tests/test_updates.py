"""Updates found by subject and value (``memd.review.updates``): where the two statements
open with one subject, and not where they only share a word that modifies two things, or
where the newer one gives nothing the older did not already say or set."""

import pytest

from memd.review.statements import Statement
from memd.review.updates import find_updates
from tests.test_review import updates_between


@pytest.mark.parametrize(
    ("older", "newer", "update"),
    [
        # The subject opens both, however little else they share.
        ("Choir rehearsal is at 7:30 in the hall.", "Rehearsal moved to 8:00 on the rota.", True),
        ("**Kiln firing:** Thursdays.", "Firing is on Mondays this term, not Thursdays.", True),
        # The name both open with is what they are about: another name beside the new
        # value ("Madrid") is no second change.
        ("Orientation is at 9:00 in the main hall.",
         "Orientation moved to 10:30 so Madrid can dial in.", True),
        # A shared opening word that modifies two things names two things.
        ("Annual gym membership is £420.", "Annual parking permit costs £90.", False),
        # A month alone is a time, not a name: no name changed.
        ("The kiln is in the basement, room B.02.", "Kiln service contract ends December.", False),
        # A part of the old value is no new value.
        ("db-02: Streaming-Replica", "db-02 set up again as Replica", False),
    ],
)  # fmt: skip
def test_a_subject_both_open_with_is_one_subject(older, newer, update):
    assert bool(updates_between(older, newer)) is update


@pytest.mark.parametrize(
    ("older", "newer", "update"),
    [
        # A value the older line already gives, in a clause of its own, is no new value.
        ("The NAS is not backed up to S3; Wasabi only.",
         "NAS backups no longer touch S3, they all go to Wasabi.", False),
        ("Screenshots go in Confluence.", "Screenshots go in Notion now.", True),
    ],
)  # fmt: skip
def test_a_value_the_older_line_gives_anywhere_is_no_new_value(older, newer, update):
    assert bool(updates_between(older, newer)) is update


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        # "No X on A" sets nothing for X; "X on B" then is not A changed to B.
        ("No flash photos of the Q3 exhibits.", "Flash photos of the Q4 exhibits are fine now."),
        ("No peanuts in the Year 4 classroom.", "Peanuts allowed in the Year 6 classroom again."),
    ],
)  # fmt: skip
def test_a_value_after_no_is_not_what_a_later_value_replaces(older, newer):
    assert updates_between(older, newer) == []


def test_a_value_beside_a_negation_is_replaced_by_a_later_one():
    """A value in a clause of its own beside "no X" holds, and a later one replaces it."""
    older, newer = "Launch party: no caterer, Pizza Express only.", "Launch party caterer: Dishoom."
    found = updates_between(older, newer)
    assert [(u.was, u.now) for u in found] == [("Pizza Express", "Dishoom")]


@pytest.mark.parametrize(
    ("older", "newer", "update"),
    [
        # A compound holds its parts: joined by a hyphen in any language, as one word in German.
        ("Der Flüssigsauerstoff wird montags nachgefüllt.",
         "Der Flüssigsauerstoff-Tank wird ab jetzt freitags nachgefüllt.", True),
        ("Die Spülmaschine im Büro wird montags ausgeräumt.",
         "Der Spülmaschinendienst im Büro ist jetzt dienstags.", True),
        ("Die Stromrechnung kommt am 3. des Monats.",
         "Der Strom wird jetzt am 15. des Monats abgebucht.", True),
        # Its parts are its subject, not another value.
        ("Der Flüssigsauerstoff wird montags nachgefüllt.",
         "Der Flüssigsauerstoff-Tank wird montags geprüft.", False),
        # An English word is not taken apart: a countdown is no count.
        ("Guest count: 120.", "Countdown: 150 days to go, party on Friday now.", False),
    ],
)  # fmt: skip
def test_a_compound_shares_its_parts_with_the_other_statement(older, newer, update):
    assert bool(updates_between(older, newer)) is update


@pytest.mark.parametrize(
    ("older", "newer", "update"),
    [
        # What follows "instead of" and its like is what was, a plain word too.
        ("The newsletter goes out by email.", "The newsletter goes out by post rather than email.",
         True),
        ("Wir bestellen den Kaffee bei Tchibo.",
         "Den Kaffee bestellen wir jetzt bei Dallmayr anstatt Tchibo.", True),
        # A separable German verb ends on "statt": what follows is no old value.
        ("Das Sommerfest ist im Garten.",
         "Das Sommerfest findet im Garten statt, Grill bringt Tom.", False),
    ],
)  # fmt: skip
def test_what_follows_instead_of_is_the_old_value(older, newer, update):
    assert bool(updates_between(older, newer)) is update


def _near(cosines: dict[str, float | None]):
    """A ``near`` giving each older text's cosine with the newer one (None: unknown yet)."""
    return lambda a, b: cosines.get(a)


def test_a_stated_update_nearest_in_meaning_is_confirmed():
    older = Statement("MEMORY.md", 3, None, "", "The deploy target is staging.")
    other = Statement("MEMORY.md", 4, None, "", "The deploy target for docs is Netlify.")
    newer = Statement("memory/2026-03-09.md", 4, "2026-03-09", "Ops",
                      "The deploy target is now production.")  # fmt: skip
    every = [older, other, newer]

    def found(cosines: dict[str, float | None]) -> list[tuple[str, bool]]:
        got = find_updates(every, lambda s: s.date or "", _near(cosines))
        return [(u.older.text, u.confirmed) for u in got]

    assert found({older.text: 0.9, other.text: 0.5}) == [(older.text, True)]
    # Another candidate nearer in meaning: the two signals disagree, found but unconfirmed.
    assert found({older.text: 0.5, other.text: 0.9}) == [(older.text, False)]
    # A candidate's meaning not known yet: not confirmed until it is.
    assert found({older.text: 0.9, other.text: None}) == [(older.text, False)]
    # No meaning at all: words alone, never confirmed.
    assert [u.confirmed for u in find_updates(every, lambda s: s.date or "")] == [False]


def test_an_update_without_a_change_word_is_never_confirmed():
    older = Statement("MEMORY.md", 3, None, "", "Logs are kept 30 days.")
    newer = Statement("memory/2026-03-09.md", 4, "2026-03-09", "Ops", "Log retention: 14 days.")
    got = find_updates([older, newer], lambda s: s.date or "", _near({older.text: 1.0}))
    assert [(u.likely, u.confirmed) for u in got] == [(True, False)]


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("Parking permit: £60 a year.", "Parking permit is £75 a year, effective 1 April."),
        ("The newsletter goes out on Fridays.", "Since May the newsletter goes out on Thursdays."),
        ("The pottery class meets on Tuesdays.", "The pottery class slipped to Wednesdays."),
        ("Die Kasse führt Heike Brandt.", "Die Kasse hat Bernd Vogel übernommen."),
        ("Der Elternabend ist am 12.03.", "Elternabend verlegt auf den 19.03."),
    ],
)  # fmt: skip
def test_words_that_date_or_hand_over_a_value_say_it_changed(older, newer):
    # "effective", "since", "slipped", "übernommen", "verlegt": a change said, so stated.
    assert [u.likely for u in updates_between(older, newer)] == [False]
