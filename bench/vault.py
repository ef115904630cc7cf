"""Deterministic synthetic memory vaults for the benchmarks.

``make_vault(root, files=5000)`` writes ``memory/YYYY-MM-DD.md`` daily notes (~4.6 KB each,
about 23 MB for 5,000) plus a MEMORY.md: headings, paragraphs, task lists, code fences and
tables, with words drawn from a Zipf-distributed vocabulary so term frequencies look like
real text. The same seed gives byte-identical files.
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
from pathlib import Path

_SYLLABLES = (
    "ka ri to na mi ser ven lo ta ru mo pe di an el or in ex al com pro ter sta gra vi "
    "bel dor fin gal hap jor kel lum mar nor pol quin ras sul tav ul wen yor zel"
).split()
_TOPICS = (
    "database migration",
    "release plan",
    "customer call",
    "incident review",
    "hiring loop",
    "budget",
    "roadmap",
    "api design",
    "security audit",
    "onboarding",
    "backup policy",
    "search quality",
    "pricing",
    "infrastructure",
    "design review",
    "retrospective",
)


def vocabulary(rng: random.Random, size: int = 20000) -> list[str]:
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        w = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((1, 2, 2, 3, 3, 4))))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


class _Writer:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary(self.rng)
        self.cum = list(itertools.accumulate(1.0 / (r + 1) for r in range(len(self.words))))

    def sentence(self, n: int) -> str:
        words = self.rng.choices(self.words, cum_weights=self.cum, k=n)
        return " ".join(words).capitalize() + "."

    def paragraph(self) -> str:
        # Paragraphs wrap at ~80 columns as people and agents write them.
        text = " ".join(
            self.sentence(self.rng.randint(6, 16)) for _ in range(self.rng.randint(2, 5))
        )
        out, line = [], ""
        for word in text.split():
            if len(line) + len(word) > 80:
                out.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        return "\n".join([*out, line])

    def section(self, hour: int) -> str:
        rng = self.rng
        parts = [f"## {hour:02d}:{rng.randint(0, 59):02d} — {rng.choice(_TOPICS)}", ""]
        for _ in range(rng.randint(1, 3)):
            kind = rng.random()
            if kind < 0.55:
                parts.append(self.paragraph())
            elif kind < 0.8:
                parts.extend(
                    f"- [{'x' if rng.random() < 0.5 else ' '}] {self.sentence(rng.randint(4, 10))}"
                    for _ in range(rng.randint(2, 6))
                )
            elif kind < 0.92:
                parts.append("```python")
                for _ in range(rng.randint(2, 8)):
                    name, value = self.words[rng.randint(0, 500)], rng.randint(0, 999)
                    parts.append(f"{name} = {value}  # {self.sentence(4)}")
                parts.append("```")
            else:
                parts.append("| item | owner | state |")
                parts.append("|---|---|---|")
                for _ in range(rng.randint(2, 5)):
                    owner, state = rng.choice(self.words[:300]), rng.choice(("open", "done"))
                    parts.append(f"| {self.sentence(3)} | {owner} | {state} |")
            parts.append("")
        return "\n".join(parts)

    def daily(self, day: dt.date) -> str:
        hours = sorted(self.rng.sample(range(6, 24), self.rng.randint(6, 10)))
        return f"# {day.isoformat()}\n\n" + "\n".join(self.section(h) for h in hours)


def make_vault(root: Path, files: int = 5000, seed: int = 1, every_note: str = "") -> Path:
    """Write a vault of ``files`` daily notes under ``root`` (idempotent for one seed).
    ``every_note``: a line put under each note's title, so a query of its words matches
    every note (a common-word search); the rest of the text is the same as without it."""
    stamp = root / ".vault-done"
    done = f"{files} {seed}" + (f" {every_note}" if every_note else "")
    if stamp.exists() and stamp.read_text() == done:
        return root
    writer = _Writer(seed)
    memory = root / "memory"
    memory.mkdir(parents=True, exist_ok=True)
    first = dt.date(2026, 11, 1) - dt.timedelta(days=files - 1)
    for n in range(files):
        day = first + dt.timedelta(days=n)
        text = writer.daily(day)
        if every_note:
            title, rest = text.split("\n\n", 1)
            text = f"{title}\n\n{every_note}\n\n{rest}"
        (memory / f"{day.isoformat()}.md").write_text(text, encoding="utf-8")
    (root / "MEMORY.md").write_text(
        "# Memory\n\n" + "\n\n".join(writer.paragraph() for _ in range(20)) + "\n",
        encoding="utf-8",
    )
    stamp.write_text(done)
    return root


def make_obsidian_vault(root: Path, notes: int = 20000, seed: int = 3) -> Path:
    """An Obsidian-style vault: notes in 40 folders with front matter, inline tags and
    wikilinks, ~5 KB each (about 100 MB for 20,000), plus a .obsidian folder."""
    stamp = root / ".vault-done"
    if stamp.exists() and stamp.read_text() == f"obsidian {notes} {seed}":
        return root
    writer = _Writer(seed)
    rng = writer.rng
    (root / ".obsidian").mkdir(parents=True, exist_ok=True)
    (root / ".obsidian" / "app.json").write_text("{}")
    titles = [f"{writer.words[i % 3000].capitalize()} {i}" for i in range(notes)]
    for n, title in enumerate(titles):
        folder = root / f"Area {n % 40:02d}"
        folder.mkdir(exist_ok=True)
        tags = rng.sample(writer.words[:200], 2)
        links = " ".join(f"[[{titles[rng.randrange(notes)]}]]" for _ in range(3))
        body = "\n\n".join([writer.section(rng.randint(6, 23)) for _ in range(rng.randint(6, 9))])
        (folder / f"{title}.md").write_text(
            f"---\ntags: [{', '.join(tags)}]\naliases: [{title.lower()}]\n---\n# {title}\n\n"
            f"Related: {links} #{rng.choice(writer.words[:100])}\n\n{body}\n",
            encoding="utf-8",
        )
    stamp.write_text(f"obsidian {notes} {seed}")
    return root


def queries(count: int = 200, seed: int = 2) -> list[str]:
    """Search queries of 1-3 mid-frequency vocabulary words, plus a few topic phrases."""
    rng = random.Random(seed)
    words = vocabulary(random.Random(1))  # the vault's own vocabulary
    out = []
    for i in range(count):
        if i % 10 == 0:
            out.append(rng.choice(_TOPICS))
        else:
            out.append(" ".join(rng.choice(words[20:4000]) for _ in range(rng.randint(1, 3))))
    return out


if __name__ == "__main__":
    import sys

    count = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    if len(sys.argv) > 3 and sys.argv[3] == "obsidian":
        make_obsidian_vault(Path(sys.argv[1]), count)
    else:
        make_vault(Path(sys.argv[1]), count)
