"""How durable a statement looks: a decision, preference, rule, ownership or lasting fact
outlives the day it was written; an event, a greeting or a question does not.

The score reads the statement's words and where it stands (a heading such as "Decisions",
a label such as "Decision:"), and is raised by the caller when the statement comes back on
another day. Each cue that counted is named, so a proposal can say why it was made.
"""

from __future__ import annotations

import re

_CUES: list[tuple[str, float, re.Pattern]] = [
    ("a decision", 0.45, re.compile(
        r"\b(?:decided|decision|agreed|we'll go with|going with|settled on|chose|opted for|"
        r"standardi[sz]e[ds]? on|adopted|approved|rejected|we will use|we'll use|switch(?:ed)? to|"
        r"moving to|move to|goes? with|will reuse)\b|决定|决策|同意", re.I)),
    ("a rule", 0.4, re.compile(
        r"\b(?:always|never|must(?: not)?|mustn't|should (?:always|never)|do not|don't ever|"
        r"rule|policy|required|requires|mandatory|only on|not allowed|no \w+ on \w+days|"
        r"needs? (?:a|an|sign-off|approval|two)|every (?:monday|tuesday|wednesday|thursday|"
        r"friday|week|month|morning|day|sprint)|first \w+ of every|weekly|monthly|rotates)\b|"
        r"总是|从不|必须|不要", re.I)),
    ("a preference", 0.4, re.compile(
        r"\b(?:prefers?|preferred|preference|favou?rite|fave|fav|top pick|likes? to|love|loves|"
        r"hates?|can't stand|allergic|vegetarian|vegan|i'm a fan of|big fan of|enjoy|enjoys|"
        r"passionate about|my passion|main hobb(?:y|ies)|i'm into|i'm drawn to|hooked on|"
        r"wants (?:\w+ )?(?:weekly|daily|short|every))\b|喜欢|偏好|讨厌", re.I)),
    ("ownership", 0.4, re.compile(
        r"\b(?:owns|owner|is responsible for|in charge of|maintains|maintainer|leads|"
        r"team lead|\w+ lead for|manager|reviews \w+(?: \w+)? on|on call for|"
        r"i'm an? (?:\w+ )?(?:manager|engineer|teacher|nurse|developer|designer|writer|guard|"
        r"player|coach|owner|student)|i work (?:as|at|for)|my job)\b|负责", re.I)),
    ("a lasting fact", 0.3, re.compile(
        r"\b(?:runs on|hosted on|lives? in|live in|located in|stored in|backs? up to|"
        r"listens on|port \d+|endpoint|version|for (?:\d+|two|three|four|five|six|seven|eight|"
        r"nine|ten|many) years|\w+ years ago|since i was|i've been|i have been|i've had|"
        r"i work as|i'm a|i am a|my (?:wife|husband|partner|kids?|son|daughter|mom|mother|dad|"
        r"father|sister|brother|dog|cat|family|fam)|married|born in|grew up|moved to|"
        r"works? at|works? as|studied|degree in|i play (?:the )?\w+|we've got a)\b", re.I)),
]  # fmt: skip
_HEADING = re.compile(
    r"\b(?:decisions?|rules?|preferences?|facts?|policy|policies|conventions?|important|"
    r"remember|owners?|ownership)\b",
    re.I,
)
_LABEL = re.compile(
    r"^\W*(?:decision|decided|rule|policy|preference|important|note to self)\b", re.I
)
_GREETING = re.compile(r"^\W*(?:hey|hi|hello|thanks|thank you|wow|awesome|congrats|"
                       r"congratulations|good to see|great to see|lol|haha|sounds good|agreed|"
                       r"yes|yeah|yep|sure|oh|aw+|ooh|that's (?:great|awesome|amazing|cool))\b",
                       re.I)  # fmt: skip
# Said to someone else (advice, praise, a question back): about them, not a lasting fact.
_ADDRESSED = re.compile(r"\b(?:you|your|you've|you're|you'll|yourself)\b", re.I)
_OWN = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|my|me|we|our|we've|we're)\b", re.I)
_WISH = re.compile(
    r"\b(?:i'd love|i would love|i'd like|would be (?:great|fun)|can't wait)\b", re.I
)
_PASSING: list[tuple[float, re.Pattern]] = [
    (0.3, re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening|week|month)|"
                     r"yesterday|tomorrow|right now|just now|last (?:night|week|weekend|friday)|"
                     r"next (?:week|month)|the other day|at the moment|since we last|"
                     r"long time no)\b", re.I)),
    (0.3, re.compile(r"^\W*(?:ask|move|finish|reply|check|fix|follow up|remind|email|call|"
                     r"schedule|book|send|update|look into|todo)\b", re.I)),
    (0.25, re.compile(r"\b(?:i went|we went|went to|had (?:lunch|dinner|coffee|a)|met with|"
                      r"watched|visited|reviewed|emailed|called|read an?|ran \d|paired with|"
                      r"chatted|caught up|just (?:got|launched|discovered|finished|signed))\b",
                      re.I)),
    (0.15, re.compile(r"\b(?:so (?:happy|glad|excited|proud)|feel(?:ing)?|felt|can't wait|"
                      r"amazing|fun)\b", re.I)),
]  # fmt: skip


# Any cue at all: most lines of a daily note have none, and one search tells.
_ANY_CUE = re.compile("|".join(f"(?:{p.pattern})" for _, _, p in _CUES), re.I)


def could_be_durable(text: str, heading: str) -> bool:
    """Whether ``text`` has a cue or stands under a heading that makes one (a quick test
    before ``durability``)."""
    return _ANY_CUE.search(text) is not None or _HEADING.search(heading) is not None


def durability(text: str, heading: str) -> tuple[float, list[str]]:
    """A score in [0, 1] and the cues that made it (``[]``: nothing durable about it)."""
    score, why = 0.15, []
    for name, weight, pattern in _CUES:
        if pattern.search(text):
            score += weight
            why.append(name)
    if why:  # structure only lifts what already reads as durable
        if _HEADING.search(heading):
            score += 0.2
            why.append(f'under "{heading}"')
        if _LABEL.match(text):
            score += 0.15
    elif _HEADING.search(heading):
        score += 0.3
        why.append(f'under "{heading}"')
    if "?" in text:
        score -= 0.5
    if _GREETING.match(text):  # a chat turn opens so; a short one is nothing more
        score -= 0.4 if len(text.split()) < 12 else 0.05
    if len(_ADDRESSED.findall(text)) > len(_OWN.findall(text)):
        score -= 0.3
    if _WISH.search(text):
        score -= 0.25
    for weight, pattern in _PASSING:
        if pattern.search(text):
            score -= weight
    if not 5 <= len(text.split()) <= 60:  # a fragment, or a story
        score -= 0.15
    return max(0.0, min(score, 1.0)), why
