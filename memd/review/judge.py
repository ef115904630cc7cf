"""Whether a later statement updates an earlier one, weighed from what the two share.

The hand rules each said yes or no on their own ("one shared word is no subject", "two
values changing at once is another thing"); each was right on the notes it was written
for and wrong on others'. Here they are features of a pair, with the overlap, the meaning
and the kind of value that changed, weighed together by a logistic model whose weights
``bench/updates_fit.py`` fits on the tune halves of the hand-labelled update sets (the
report halves are kept for measuring). The weights are in ``memd.review.judge_weights``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memd.review.judge_weights import THRESHOLD, WEIGHTS
from memd.review.values import Said

# The kinds of value, grouped as the weights see them.
_KINDS = {"num": "num", "day": "when", "time": "when", "date": "when", "version": "version"}


@dataclass(frozen=True)
class Reading:
    """One candidate pair read closely: the value the newer gives anew (None: no value of
    any shape changed, so no update) and the pair's features for the judge."""

    change: tuple[str, str, str] | None  # (kind, was, now) as written
    features: dict[str, float]  # "cover": how much of one subject the two share (0..1)


def probability(features: dict[str, float]) -> float:
    """The judge's belief that the pair is an update (0..1)."""
    z = WEIGHTS.get("bias", 0.0) + sum(WEIGHTS.get(k, 0.0) * v for k, v in features.items())
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def accepted(p: float) -> bool:
    """Whether a pair this likely is taken as an update."""
    return p >= THRESHOLD


def kind_feature(kind: str) -> str:
    """The feature named for a kind of value ("kind_when" for days, times and dates)."""
    return "kind_" + _KINDS.get(kind, "name" if kind == "name" else "value")


def describe(o: Said, d: Said) -> dict[str, float]:
    """Features of the two statements themselves, whatever else is known of the pair."""
    return {
        "changed": float(d.changed),
        "older_changed": float(o.changed),
        "negflip": float(d.negated and not o.negated),
        "older_slot": float(bool(o.slot)),
        "newer_slot": float(bool(d.slot)),
    }
