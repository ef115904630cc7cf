"""The review on workspaces written as agents write them (bench/fixtures/agent-workspaces).

Three hand-written workspaces in agents' style (session dumps, ``Label: value`` lines,
briefs, German and English) with a key of what is in them: the facts later notes update,
lines that share a label but are about different things, facts worth promoting. The
review runs on each as ``memd review`` does (no model); every proposal it shows is judged
against the key and the judgement is written down per proposal:

- a conflict (update) is right when the key has its older and newer lines as an update
  (or a link of the same chain);
- a promotion is right when the key lists its line as promotable (or as the repeated
  fact, once);
- anything else is judged by hand in ``JUDGED`` below, with the reason.

Also counted: relations the index keeps (``memd.review.currency``) between lines the key
calls traps (false supersessions), and how many updates of the key it found.

    python bench/review_workspaces_bench.py
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memd.configfile import parse_config
from memd.memory import Memory

FIXTURES = Path(__file__).parent / "fixtures" / "agent-workspaces"
# Proposals the key does not cover, judged by hand: (workspace, first citation) -> (right?, why).
# ``None`` marks a line the key calls borderline: counted neither way.
JUDGED: dict[tuple[str, str], tuple[bool | None, str]] = {
    ("ops-de", "MEMORY.md#L13"): (False, "the same rule said from the other side, no change"),
    ("ops-de", "MEMORY.md#L37"): (False, "the complaint the day before the change, not it"),
    ("ops-de", "memory/2026-01-19.md#L4-L6"): (False, "a complaint and a decision still open"),
    ("ops-de", "MEMORY.md#L60"): (False, "a reminder from the same contact, no change"),
    ("ops-de", "MEMORY.md#L33"): (False, "a question and a measurement, no change"),
    ("ops-de", "MEMORY.md#L23"): (False, "a handover from Lena to Kemal, not Lena's days"),
    ("ops-de", "MEMORY.md#L62"): (True, "the customer's 429 complaints are over: the line is old"),
    ("ops-de", "memory/2026-01-28.md#L7"): (True, "the backup retention policy: lasting"),
    ("ops-de", "memory/2026-02-16.md#L14"): (False, "an agenda item, not a fact"),
    ("ops-de", "memory/2026-02-17.md#L7-L8"): (True, "the new owner of billing-worker"),
    ("ops-de", "memory/2026-02-26.md#L5"): (True, "where the monthly Glacier dump runs: lasting"),
    ("research", "memory/2026-02-24.md#L7"): (False, "MEMORY.md already names that generator"),
    ("research", "memory/2026-02-06.md#L15"): (False, "superseded: the generator went back"),
    ("research", "memory/2026-03-10.md#L7"): (False, "a fragment of a conversation"),
    ("research", "memory/2026-03-10.md#L8"): (None, "borderline in the key"),
    ("research", "memory/2026-02-20.md#L4-L5"): (False, "a debugging finding, an event"),
    ("research", "memory/2026-03-06.md#L5"): (True, "the supervisor's preference: lasting"),
    ("research", "MEMORY.md#L10"): (False, "a to-do and a session turn; the rule still holds"),
    ("research", "memory/2026-02-03.md#L5"): (False, "superseded: the generator went back"),
    ("household", "memory/2026-03-04.md#L9"): (None, "borderline in the key"),
    ("household", "MEMORY.md#L26"): (True, "Oma no longer picks up on Thursdays"),
    ("household", "MEMORY.md#L42"): (False, "the contract restated, no change"),
    ("household", "MEMORY.md#L41"): (True, "the Kita fee went from €210 to €185"),
    ("household", "MEMORY.md#L24"): (False, "a day's log of the same time, not the change"),
    ("household", "memory/2026-01-21.md#L13"): (True, "the Kita's lasting rule on nuts"),
    ("household", "memory/2026-01-26.md#L9"): (False, "trip planning, the allergy is known"),
    # Judged for the promotions read from form (memd.review.lasting), by one rule: right
    # when a person keeping this MEMORY.md would add the line as written, its subject
    # clear from the line itself, because it holds beyond its day.
    ("ops-de", "memory/2026-01-12.md#L11"): (False, "the status of a trial, not lasting"),
    ("ops-de", "memory/2026-02-19.md#L9"): (
        False,
        "the trial's outcome, but its subject is only in the heading: the line alone says nothing",
    ),
    ("ops-de", "memory/2026-01-13.md#L9"): (False, "a deploy's status"),
    ("ops-de", "memory/2026-01-30.md#L10"): (False, "a trial started that day"),
    ("ops-de", "memory/2026-01-30.md#L12"): (
        False,
        "a setting of a trial, its subject only in the heading",
    ),
    ("ops-de", "memory/2026-01-26.md#L8"): (
        False,
        "a point in a comparison before the decision (the 01-28 update carries the fact)",
    ),
    ("ops-de", "memory/2026-02-24.md#L13"): (
        True,
        "the monthly Glacier dump on the 1st, approved: lasting (02-26 says it again)",
    ),
    ("ops-de", "memory/2026-02-06.md#L4"): (False, "an incident's log line"),
    ("ops-de", "memory/2026-02-06.md#L7"): (
        False,
        "MEMORY.md's status-page rule applied to one incident",
    ),
    ("ops-de", "memory/2026-01-16.md#L6"): (
        False,
        "a detail of the restore-test script; alone, the path of what?",
    ),
    ("ops-de", "memory/2026-02-03.md#L10"): (
        True,
        "where the rate limits are configured: lasting, the file names it",
    ),
    ("ops-de", "memory/2026-01-22.md#L4-L5"): (
        True,
        "the Renovate decision the key lists (L5), one paragraph with the line before",
    ),
    ("ops-de", "memory/2026-01-30.md#L11"): (
        True,
        "the log summary's model, kept after the trial (02-19)",
    ),
    ("research", "memory/2026-01-29.md#L4"): (
        True,
        "the new meeting slot, right to keep; it "
        "is the update of MEMORY.md#L19, not paired, "
        "so the old line is not cited",
    ),
    ("research", "memory/2026-02-05.md#L10"): (False, "an estimate among a day's notes"),
    ("research", "memory/2026-01-22.md#L9"): (
        False,
        "a meeting's remark about a target that changed later",
    ),
    ("research", "memory/2026-02-10.md#L6"): (False, "a turn of a meeting"),
    ("research", "memory/2026-02-17.md#L4-L5"): (
        True,
        "the new lab quota, right to keep; it "
        "is the update of MEMORY.md#L45, not "
        "paired, so the old line is not cited",
    ),
    ("research", "memory/2026-01-20.md#L13"): (False, "a result and a remark"),
    ("research", "memory/2026-01-28.md#L8"): (
        True,
        "how to live with preemption on gpu-long: lasting",
    ),
    ("research", "memory/2026-03-03.md#L12"): (False, "a detail of one human eval"),
    ("research", "memory/2026-02-27.md#L8"): (
        False,
        "MEMORY.md already says travel is booked through the portal",
    ),
    ("research", "memory/2026-02-17.md#L10"): (False, "an option in a list"),
    ("research", "memory/2026-03-10.md#L11"): (
        True,
        "a decision on the paper, as the author order the key lists",
    ),
    ("research", "memory/2026-02-19.md#L17"): (False, "a one-off absence"),
    ("household", "memory/2026-02-16.md#L8"): (
        True,
        "the new monthly payment, right to keep; it is the update of MEMORY.md#L40, not "
        "paired, so the old line is not cited",
    ),
    ("household", "memory/2026-01-13.md#L3"): (False, "a lesson's log and advice for one piece"),
    ("household", "memory/2026-01-26.md#L4"): (False, "a brief for a task, decided later"),
    ("household", "memory/2026-02-19.md#L8"): (False, "one item of a shopping list"),
    ("household", "memory/2026-02-06.md#L6"): (
        False,
        'a lasting arrangement, but as written "does Fridays" does not say what',
    ),
    ("household", "memory/2026-01-21.md#L12"): (False, "a one-off outing"),
    ("household", "memory/2026-03-01.md#L14"): (
        False,
        "restates MEMORY.md's bills with two updates found elsewhere",
    ),
}


def cites(citation: str) -> tuple[str, int]:
    path, _, lines = citation.partition("#L")
    return path, int(lines.split("-")[0])


def judge(ws: str, p: dict, key: dict) -> tuple[bool | None, str]:
    cited = [cites(c) for c in p["citations"]]
    if p["kind"] == "conflict":
        pairs = {(cites(u["older"]), cites(u["newer"])) for u in key["updates"]}
        linked = _linked(pairs)
        pair = (cited[0], cited[-1])
        if pair in pairs or pair in linked:
            return True, "an update the key lists"
        for a, b in ((cites(t["a"]), cites(t["b"])) for t in key["traps"]):
            if {a, b} == set(pair):
                return False, "a trap: same label, different things"
    if p["kind"] == "promote":
        good = {cites(x["at"]) for x in key["promotable"]}
        rep = key.get("repeated") or {}
        if isinstance(rep, dict):
            good |= {cites(c) for c in rep.get("at", [])}
        elif isinstance(rep, list):
            for r in rep:
                good |= {cites(c) for c in r.get("at", [])}
        if any(c in good for c in cited):
            return True, "a fact the key lists as promotable"
    if (ws, p["citations"][0]) in JUDGED:
        return JUDGED[(ws, p["citations"][0])]
    return None, "NOT JUDGED: not in the key, judge by hand"


def _linked(pairs: set) -> set:
    out = set()
    for a, b in pairs:
        for c, d in pairs:
            if b == c:
                out.add((a, d))
    return out


def main() -> None:
    key = json.loads((FIXTURES / "KEY.json").read_text())
    result: dict = {"workspaces": {}}
    right = shown = unjudged = 0
    with tempfile.TemporaryDirectory() as tmp:
        for ws in ("ops-de", "research", "household"):
            root = Path(tmp) / ws
            shutil.copytree(FIXTURES / ws, root)
            raw = {"workspace": str(root), "state_dir": str(Path(tmp) / f"state-{ws}"),
                   "embeddings": {"provider": "none"}, "review": {"enabled": False},
                   "flush": {"timezone": "UTC"}}  # fmt: skip
            with Memory(parse_config(raw, env={"HOME": tmp})) as memory:
                memory.index()
                memory.currency.refresh()
                started = time.perf_counter()
                answer = memory.reviewer.run().as_dict()
                seconds = time.perf_counter() - started
                relations = [(u.older.citation, u.newer.citation) for u in memory.currency.updates]
            k = key[ws]
            judged = []
            for p in answer["proposals"]:
                ok, why = judge(ws, p, k)
                judged.append({"kind": p["kind"], "citations": p["citations"], "text": p["text"],
                               "reason": p["reason"], "right": ok, "why": why})  # fmt: skip
            traps = {frozenset((cites(t["a"]), cites(t["b"]))) for t in k["traps"]}
            false = [r for r in relations if frozenset(cites(c) for c in r) in traps]
            updates = {(cites(u["older"]), cites(u["newer"])) for u in k["updates"]}
            found = {(cites(a), cites(b)) for a, b in relations}
            w = {
                "shown": len(judged),
                "more": answer.get("more", 0),
                "right": sum(j["right"] is True for j in judged),
                "unjudged": sum(j["why"].startswith("NOT JUDGED") for j in judged),
                "borderline": sum(j["why"] == "borderline in the key" for j in judged),
                "seconds": round(seconds, 2),
                "key_updates_found": f"{len(updates & found)}/{len(updates)}",
                "false_supersessions_on_traps": len(false),
                "relations": len(relations),
                "proposals": judged,
            }
            result["workspaces"][ws] = w
            right += w["right"]
            shown += w["shown"] - w["borderline"]
            unjudged += w["unjudged"]
            print(f"{ws:10} shown {w['shown']:2} (+{w['more']} more), right {w['right']}, "
                  f"unjudged {w['unjudged']}, key updates found {w['key_updates_found']}, "
                  f"false supersessions on traps {len(false)}, {w['seconds']} s")  # fmt: skip
            for j in judged:
                mark = {True: "RIGHT", False: "WRONG", None: "?"}[j["right"]]
                print(f"   {mark:5} {j['kind']:9} {j['citations']} {j['text'][:90]!r}")
    result["right_share"] = round(right / shown, 3) if shown else None
    result["unjudged"] = unjudged
    print(f"right {right} of {shown} shown ({result['right_share']}), unjudged {unjudged}")
    out = Path(__file__).parent / "results" / "review-workspaces.json"
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
