"""Retrieval when the question shares no word with its answer: a paraphrase set.

    python bench/paraphrase_bench.py [--modes keyword,auto] [--out ...]
    python bench/paraphrase_bench.py --check

``bench/paraphrase.json`` holds questions written for memd, in our own words (no note
text is copied): about 13 on each of the five LoCoMo conversations in
../shared/bench-data/locomo-dev/ and a dozen on the bundled demo workspace, each with the
file and 1-based line(s) that answer it. The rule that makes the set: a question shares
no content word with its evidence, as memd's keyword index sees words. Content words are
the words not in ``memd.store.fts.STOPWORDS`` (checked on the lowercase word), stemmed by FTS5's
own ``porter unicode61 remove_diacritics 2`` tokenizer; a word also counts as shared
when one of its irregular forms (``memd.sources.wordforms.forms``: go, went, gone) is there. The
evidence is the answering lines together with the headings above them (a daily note's
``# date`` and ``## Session`` lines, the demo's ``#`` and ``##`` headings) and a note's
front matter, so no chunk that holds the answer can be found by a keyword the question
names: only meaning (the vector side) can find it. ``--check`` applies the rule to every
question, without opening any index, and exits 1 listing the questions that break it;
the benchmark runs it first too.

A question is a hit at k when one of its top k results is in an evidence file and its
lines hold an evidence line (``first_hit`` of locomo_bench). Prints R@1/3/5/10 per mode
with ``min_score=0``, and again at the default ``min_score``. Shares locomo_bench's
indexes and embedding cache under bench/.data/locomo/.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import apsw  # noqa: E402

from bench.common import write_result  # noqa: E402
from bench.locomo_bench import DATA, first_hit, open_memories, recall  # noqa: E402
from memd.log import configure_logging  # noqa: E402
from memd.sources.wordforms import forms  # noqa: E402
from memd.store.fts import STOPWORDS, _tokenizer  # noqa: E402

SET = HERE / "paraphrase.json"
DEMO = HERE.parent / "demo" / "workspace"
_HEADING = re.compile(r"#{1,6}\s")
_FENCE = re.compile(r"\s*(```|~~~)")


class Words:
    """Content words as the keyword index sees them: unicode61 words not in STOPWORDS,
    each stemmed by porter, with the stems of its irregular forms."""

    def __init__(self) -> None:
        plain = apsw.Connection(":memory:").fts5_tokenizer("unicode61", ["remove_diacritics", "2"])
        self._plain = lambda text: [
            t[2] for t in plain(text.encode(), apsw.FTS5_TOKENIZE_DOCUMENT, None)
        ]
        self._stem = _tokenizer()

    def stems(self, text: str) -> dict[str, set[str]]:
        """Each content word of ``text`` (lowercase), with the stems it matches."""
        out: dict[str, set[str]] = {}
        for word in self._plain(text):
            if word in STOPWORDS or word in out:
                continue
            stems: set[str] = set()
            for base in (word, *self._stem(word)):
                for form in forms(base):
                    stems.update(self._stem(form))
            out[word] = stems
        return out


def root(sample: str, data: Path) -> Path:
    return DEMO if sample == "demo" else data / sample


def context(lines: list[str], line: int) -> list[str]:
    """The headings above 1-based ``line`` (nearest of each level, outside code fences)
    and the note's front matter."""
    front: list[str] = []
    start = 0
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                front, start = lines[1:i], i + 1
                break
    headings: dict[int, str] = {}
    fenced = False
    for text in lines[start : line - 1]:
        if _FENCE.match(text):
            fenced = not fenced
        elif not fenced and _HEADING.match(text):
            level = len(text) - len(text.lstrip("#"))
            headings = {k: v for k, v in headings.items() if k < level}
            headings[level] = text
    return [*front, *headings.values()]


def evidence_text(q: dict, data: Path) -> str:
    parts: list[str] = []
    for path, line in q["evidence"]:
        lines = (root(q["sample"], data) / path).read_text().splitlines()
        if not 1 <= line <= len(lines) or not lines[line - 1].strip():
            raise ValueError(f"{q['sample']} {path}:{line} is not a line of text")
        parts += [lines[line - 1], *context(lines, line)]
    return "\n".join(parts)


def violations(qs: list[dict], data: Path) -> list[tuple[dict, list[str]]]:
    """Each question sharing a content word with its evidence, and the words shared."""
    words = Words()
    bad = []
    for q in qs:
        held = set().union(*words.stems(evidence_text(q, data)).values())
        shared = sorted(w for w, stems in words.stems(q["question"]).items() if stems & held)
        if shared:
            bad.append((q, shared))
    return bad


def check(qs: list[dict], data: Path) -> bool:
    bad = violations(qs, data)
    for q, shared in bad:
        print(f"shares {', '.join(shared)}: [{q['sample']}] {q['question']}")
    samples = {s: sum(1 for q in qs if q["sample"] == s) for s in sorted({q["sample"] for q in qs})}
    print(f"{len(qs)} questions {samples}: {len(bad)} share a content word with their evidence")
    return not bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--check", action="store_true", help="only check the no-shared-word rule")
    ap.add_argument("--modes", default="keyword,auto")
    ap.add_argument("--work", type=Path, default=HERE / ".data" / "locomo")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "paraphrase.json")
    ap.add_argument("--search", type=json.loads, default={}, help="search settings, as JSON")
    args = ap.parse_args()
    qs = json.loads(SET.read_text())
    if not check(qs, args.data):
        return 1
    if args.check:
        return 0
    configure_logging("warning")
    modes = args.modes.split(",")
    memories = open_memories(args.data, args.work, "local", args.search)
    result: dict = {"benchmark": "paraphrase", "questions": len(qs), "provider": "local"}
    t = time.perf_counter()
    for memory in memories.values():
        memory.index()
        memory.embed_all()
    result["index_and_embed_s"] = round(time.perf_counter() - t, 1)
    result["min_score"] = next(iter(memories.values())).config.search.min_score
    for mode in modes:
        for floor, label in ((0.0, mode), (None, f"{mode}_at_default_min_score")):
            ranks, latencies = [], []
            for q in qs:
                t = time.perf_counter()
                options = {} if floor is None else {"min_score": floor}
                answer = memories[q["sample"]].search(
                    q["question"], mode=mode, max_results=10, **options
                )
                latencies.append(time.perf_counter() - t)
                ranks.append(first_hit(answer.results, q["evidence"]))
            result[label] = {
                **recall(ranks),
                "ms": round(1000 * sorted(latencies)[len(ranks) // 2], 1),
            }
            print(label, result[label])
    for memory in memories.values():
        memory.close()
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
