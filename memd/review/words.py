"""The words statements are read with: days, months, change words, German function
words and the small closed classes of verbs and negations (``memd.review.values``)."""

from __future__ import annotations

# fmt: off
DAYS = {
    "monday": "mon", "mondays": "mon", "mon": "mon", "tuesday": "tue", "tuesdays": "tue",
    "tue": "tue", "tues": "tue", "wednesday": "wed", "wednesdays": "wed", "wed": "wed",
    "thursday": "thu", "thursdays": "thu", "thu": "thu", "thurs": "thu", "friday": "fri",
    "fridays": "fri", "fri": "fri", "saturday": "sat", "saturdays": "sat", "sat": "sat",
    "sunday": "sun", "sundays": "sun", "sun": "sun", "weekday": "wkd", "weekdays": "wkd",
    "weekend": "wke", "weekends": "wke",
    "montag": "mon", "montags": "mon", "dienstag": "tue", "dienstags": "tue",
    "mittwoch": "wed", "mittwochs": "wed", "donnerstag": "thu", "donnerstags": "thu",
    "freitag": "fri", "freitags": "fri", "samstag": "sat", "samstags": "sat",
    "sonntag": "sun", "sonntags": "sun",
}
MONTHS = {
    "january": 1, "jan": 1, "februar": 2, "february": 2, "feb": 2, "march": 3, "mar": 3,
    "märz": 3, "april": 4, "apr": 4, "may": 5, "mai": 5, "june": 6, "jun": 6, "juni": 6,
    "july": 7, "jul": 7, "juli": 7, "august": 8, "aug": 8, "september": 9, "sep": 9,
    "sept": 9, "october": 10, "oct": 10, "oktober": 10, "november": 11, "nov": 11,
    "december": 12, "dec": 12, "dezember": 12, "januar": 1,
}
# Words that say a value changed. Their presence makes an update surer; their absence
# never rules one out (a note may just state the new value).
CHANGE = frozenset("""
    now switched switch switching changed change changes moved move moves moving replaced
    renamed retimed rescheduled rearranged pushed postponed
    replace replaces instead anymore longer was were back reverted returned upped bumped
    raised lowered increased decreased reduced extended shortened dropped new newly updated again
    update upgraded downgraded migrated swapped became becomes rather
    jetzt nun neu neue neuer neues nicht mehr statt stattdessen gewechselt geändert
    umgestellt verschoben wieder seit ab zurück
    effective since onwards forward nowadays slipped handed stepped correction
    inzwischen mittlerweile übernommen übernimmt übergeben abgegeben umgezogen verlegt
    vorher korrektur
""".split())
# "Over" says a change only after these ("took over", "handed over"): alone it is a
# comparison ("quotes over £150") or a place.
HANDING = frozenset("took takes take taking handed hands hand handing".split())
# German days as notes shorten them ("Di + Do", "Mo–Do"), read only in German text.
DAYS_DE = {"mo": "mon", "di": "tue", "mi": "wed", "do": "thu", "fr": "fri", "sa": "sat",
            "so": "sun"}  # fmt: skip
# German function words: in a German sentence every noun is capitalised, so a capital
# says nothing about a name there.
GERMAN = frozenset("""
    der die das den dem des ein eine einen einem und ist sind nicht mit auf für von zu im
    am bei nach wir ich er sie es wird werden wurde jetzt noch auch nur aus beim zum zur
    ab seit kein keine unter über oder aber wenn dass weil bis als wie schon sich nur mal
    mein meine meinen meiner unser unsere unseren dein deine
    nach gehen laufen läuft geht wer eine einer eines sofort bisher uhr
""".split())
# fmt: on
# Words before a value that mark it as the one left behind.
LEAVING = frozenset(
    "instead than off was were not longer statt anstatt vorher früher nicht".split()
)
IRREGULAR_PAST = frozenset(
    """
    went flew ran met had got bought took made saw gave came sent spent wrote paid left drove
    ate drank sold told found thought brought caught taught built kept slept held heard lost
    rode swam sang began won fell felt forgot hung stood sat spoke broke chose froze stole
    wore tore drew grew threw knew shook woke
""".split()
)
DECIDED = frozenset("decided agreed approved confirmed settled concluded".split())
COPULA = frozenset("is was will has had takes took becomes became ist wird hat".split())
NOT = frozenset(("not", "nicht", "kein", "keine"))
NEGATING = frozenset(("no", "longer", "never", "stopped", "don't", "doesn't", "quit", "nie"))
RANGE = frozenset(("to", "-", "–", "and", "or", "bis", "und", "oder", "from"))
