"""The command line's output for people: one printer per command, and progress lines.

Every printer takes the method's result object as the socket sends it. Results go to
stdout; notes about them (freshness, warnings, paging) go to stderr, so a script that reads
stdout gets only the answer. Imports nothing beyond the standard library.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


def note(text: str) -> None:
    print(text, file=sys.stderr)


# An answer given while what is current was still being found (``current: "pending"``).
PENDING = (
    "what later notes replaced is still being found (after 'memd index'): "
    "a line shown here may have been replaced since"
)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 file``, ``2 files``: the noun in the plural only when the count needs it."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def index_report(r: dict, warnings: bool = True) -> None:
    """An index pass's counts, and its warnings unless they were logged as they came."""
    print(
        f"indexed in {r['seconds']:.2f} s: {r['added']} added, {r['changed']} changed, "
        f"{r['removed']} removed, {r['unchanged']} unchanged, {r['skipped']} skipped "
        f"({r['chunks']} chunks written)"
    )
    if r.get("embedded"):
        print(f"embedded {r['embedded']} chunks")
    for w in r["warnings"] if warnings else ():
        note(f"warning: {w}")


def freshness(r: dict) -> str | None:
    """One line on what a search answer may be missing, or None when it is current."""
    index = r.get("index") or {}
    parts = []
    if progress := index.get("indexing"):
        parts.append(f"indexing: {progress['done']} of {progress['total']} files")
    elif index.get("stale"):
        waiting = index.get("pending_files") or 0
        parts.append(
            f"{counted(waiting, 'changed file')} not indexed yet"
            if waiting
            else "the files are not being watched right now"
        )
    if index.get("pending_embeddings"):
        n = index["pending_embeddings"]
        shown = index.get("meaning_share")
        share = (
            "" if shown is None else f", {round(shown * 100)} % of these results' files by meaning"
        )
        parts.append(f"{counted(n, 'chunk')} not embedded yet (found by keyword only{share})")
    if not parts:
        return None
    if index.get("stale"):
        parts.append("recent edits may be missing")
    return "index: " + "; ".join(parts)


def search(r: dict) -> None:
    if r.get("warning"):
        note(f"warning: {r['warning']}")
    if r.get("current") == "pending":
        note(f"memd: {PENDING}")
    if line := freshness(r):
        note(line)
    if t := r.get("time"):
        read = f"time: '{t['matched']}' read as {t['from'] or '...'} to {t['to'] or '...'}"
        if t.get("ahead"):
            read += "; still to come, so the notes that name it come first"
        note(read + ("; no notes from then, so searched without it" if t.get("empty") else ""))
    if not r["results"]:
        if r.get("below_floor"):
            print(
                f"nothing above the relevance floor (best {r['best_score']:.2f}; "
                "--min-score 0 shows it)"
            )
        else:
            print("nothing relevant found")
        return
    for n, hit in enumerate(r["results"]):
        if n:
            print()
        if hit.get("match") == "weak" and (n == 0 or r["results"][n - 1].get("match") != "weak"):
            print("weaker matches, below the relevance floor:\n")
        heading = f"  {hit['heading']}" if hit["heading"] else ""
        whose = f"{hit['host']}/{hit['workspace']}:" if "host" in hit else ""  # --scope team
        later = ""
        if "superseded_by" in hit:
            how = ", likely" if hit.get("superseded") == "likely" else ""
            later = f"  (superseded by {hit['superseded_by']}{how})"
        more = f"  (+{hit['more_chunks']} more in this note)" if "more_chunks" in hit else ""
        print(f"{hit['score']:.2f}  {whose}{hit['citation']}{heading}{later}{more}")
        for line in hit["snippet"].splitlines():
            print(f"      {line}")
        if hit.get("backlinks"):  # a note with no body: what links to it
            print("      -- linked from " + ", ".join(hit["backlinks"]))


def get(r: dict) -> int:
    """Print the lines; past the end of the file, say how long it is and return 1."""
    if not r["text"] and r["from"] > max(r["total_lines"], 1):
        total = r["total_lines"]
        note(f"memd: {r['path']} has {counted(total, 'line')}; --from {r['from']} is past the end")
        return 1
    sys.stdout.write(r["text"])
    if r.get("backlinks"):
        note("-- linked from " + ", ".join(r["backlinks"]))
    if r["next_from"]:
        note(
            f"-- lines {r['from']}-{r['from'] + r['lines'] - 1} of {r['total_lines']}; "
            f"more with --from {r['next_from']}"
        )
    return 0


def flush(r: dict) -> None:
    where = [f"{w['path']}#L{w['start_line']}-L{w['end_line']}" for w in r["written"]]
    if r["duplicate"]:  # what ``written`` holds then is where the first flush wrote
        print(f"already flushed with this id ({', '.join(where)}); nothing written")
    else:
        for citation in where:
            print(f"wrote {citation}")
    for s in r.get("skipped", []):
        print(f"skipped: {s['reason']} ({s['path']})")
    if r.get("warning"):
        note(f"warning: {r['warning']}")


def store(r: dict) -> None:
    verb = "replaced" if r["replaced"] else "stored"
    print(f"{verb} {r['path']}#L{r['start_line']}-L{r['end_line']}")


def forget(r: dict, key: str) -> int:
    if r["removed"]:
        print(f"removed {key!r} from {', '.join(r['paths'])}")
        return 0
    note(f"memd: no stored key {key!r}; 'memd list' shows the keys there are")
    return 1


def key_list(r: dict) -> None:
    if not r["entries"]:
        note("no stored keys; add one with: memd store KEY CONTENT")
        return
    width = min(max(len(e["key"]) for e in r["entries"]), 24)
    for e in r["entries"]:
        where = f"{e['path']}:{e['line']}"
        print(f"{e['key']:<{width}}  {e.get('value', '')}  ({where}, {e['category']})")


def review(r: dict) -> None:
    if r.get("warning"):
        note(r["warning"])
    if r.get("current") == "pending":
        note(f"memd: {PENDING}")
    if not r["proposals"]:
        note(f"nothing to propose ({r['files']} files reviewed)")
        return
    for p in r["proposals"]:
        print(f"{p['id']}  {p['kind']:<9} {p['score']:.2f}  {p['reason']}")
        print(f"    {p['text']}")
        print(f"    cites {', '.join(p['citations'])}; apply: {p['action']}")
    how = "memd review --apply ID appends or stores, --dismiss ID hides"
    note(f"{counted(r['count'], 'proposal')}; {how}")


def review_applied(r: dict) -> None:
    for a in r["applied"]:
        if "error" in a:
            print(f"{a['id']}  not applied: {a['error']}")
        elif a["action"] == "append":
            again = " (already applied)" if a.get("duplicate") else ""
            print(f"{a['id']}  appended to {a['path']}:{a['start_line']}{again}")
        elif a["action"] == "store":
            print(f"{a['id']}  stored key {a['key']!r} ({a['path']}:{a['start_line']})")
        else:
            print(f"{a['id']}  forgot key {a['key']!r} ({', '.join(a['paths'])})")
    for pid in r["dismissed"]:
        print(f"{pid}  dismissed")


def status(r: dict, extra: dict) -> None:
    """The status object, then where this answer came from (config, socket, daemon)."""
    rows = {**r, **extra}
    if "config" in rows and rows["config"] is None:
        rows["config"] = "none: built-in defaults"
    width = max(len(k) for k in rows)
    for key, value in rows.items():
        if key == "embedding" and value:
            value = embedding_line(value)
        elif key == "finishing":  # memd.index.finishlock: after a ``memd index``
            queued = "queued behind another, " if value["queued"] else ""
            value = f"{queued}pid {value['pid'] or '?'}, since {value['since'] or '?'}"
        elif isinstance(value, list):
            value = ", ".join(map(str, value))
        elif isinstance(value, dict):  # team: host laptop-a, state idle, outbox 0, ...
            value = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in value.items())
        print(f"{key.replace('_', ' '):<{width}}  {'-' if value is None else value}")


def embedding_line(e: dict) -> str:
    """``1200/40000 chunks, 85.0/s, about 7 min left`` from a status's ``embedding`` (and
    ``; interim vectors 400/38800 chunks`` while that tier is made)."""
    line = f"{e['done']}/{e['total']} chunks"
    if e.get("per_s"):
        line += f", {e['per_s']:.1f}/s, about {_duration(e['eta_s'])} left"
    interim = e.get("interim")
    if interim:  # memd.index.interim: what search by meaning already has meanwhile
        line += f"; interim vectors {interim['done']}/{interim['total']} chunks"
        if interim.get("per_s") and interim["done"] < interim["total"]:
            line += f", about {_duration(interim['eta_s'])} left"
    recent = e.get("recent")
    if recent and recent["chunks"]:  # the newest week: what a person looks for first
        line += f"; newest {recent['days']:g} days: {recent['full']}/{recent['chunks']} full" + (
            f", {recent['interim']} interim" if recent["interim"] else ""
        )
    return line


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


class Progress:
    """``verb done/total unit`` on one terminal line; with ``rate``, also the rate and the
    time left ("embedding 64/808 chunks, 3.2/s, about 4 min left")."""

    def __init__(self, verb: str, unit: str, rate: bool = False) -> None:
        self.verb, self.unit, self.rate = verb, unit, rate
        self.started = time.monotonic()
        self.first_estimate: Callable[[str], None] | None = None

    def __call__(self, done: int, total: int) -> None:
        line = f"{self.verb} {done}/{total} {self.unit}"
        elapsed = time.monotonic() - self.started
        if self.rate and done and elapsed > 0:
            per_s = done / elapsed
            left = _duration((total - done) / per_s) if done < total else "0 s"
            line += f", {per_s:.1f}/s, about {left} left"
            if self.first_estimate is not None:
                self.first_estimate(_duration((total - done) / per_s))
                self.first_estimate = None
        sys.stderr.write(f"\r\033[K{line}")
        sys.stderr.flush()

    @staticmethod
    def clear() -> None:
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()
