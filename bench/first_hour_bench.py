"""The first hour with a big vault: how soon search by meaning is useful, from nothing.

    python bench/first_hour_bench.py [--files 5000] [--minutes 12] [--no-interim] [--out FILE]

Writes a ``bench/vault.py`` vault (5,000 daily notes, ~42k chunks), starts a real ``memd
serve`` on it with the local model and an empty state folder, and every few seconds reads
``status`` over the socket and the index (read-only) to report:

- ``keyword_ready_s``: the first pass has indexed every note (keyword search works);
- ``recent_full_s``: every chunk of the newest 7 days of notes has the full model's vectors
  (target ≤ 60 s);
- ``every_chunk_s``: every chunk has a vector of some tier (the interim tier, made from the
  words, ``memd.index.interim``; target ≤ 300 s);
- ``full_s`` if the full model reached every chunk within ``--minutes``, else
  ``full_eta_s``: the daemon's own estimate at the end (elapsed + its ``eta_s``);
- hybrid search p50/p95 over the socket while the back-fill runs (vault queries, one every
  half second after the first pass), and the daemon's RSS.

``--no-interim`` runs the same with ``embeddings.interim: false``: the figures before it.

``--paraphrase`` adds the 40 topic notes of ``bench/vault_bench.py`` (with their linking
notes, daily notes and drawings) as an extra path, dated three years back, so the full
model reaches them last, and asks their questions in other words (``asked``, and the
``unworded`` ones that share no content word with their note) at ``--at`` minutes after
the first pass (default 1, 5, 15), in the default mode and in keyword mode: R@5 (the topic
note among the first five results), how many answers said why meaning was not used
(``warning``; ``said_not_ready``: of those, the ones that searched by vectors but said
meaning is not ready yet), and how far each tier had got. ``--equal-mtimes`` gives every
file one mtime (a git checkout) and every daily note hash-, hex- and number-like tokens.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import apsw  # noqa: E402

from bench.common import percentile, start_daemon, write_result  # noqa: E402
from bench.soak_bench import snapshot  # noqa: E402
from bench.vault import make_vault, queries  # noqa: E402
from bench.vault_bench import TOPICS, unworded  # noqa: E402
from bench.vault_bench import make_vault as make_topics  # noqa: E402
from memd.client import Client  # noqa: E402
from memd.embed.providers import LOCAL_MODEL  # noqa: E402
from memd.errors import MemdError  # noqa: E402
from memd.sources.passages import FORMAT  # noqa: E402

FULL_KEY = f"local/{LOCAL_MODEL}/passages-{FORMAT}"  # as memd.index.index names them


def recent_without_vectors(db: Path, since: str) -> int | None:
    """Chunks of notes dated ``since`` or later that lack the full model's vectors."""
    if not db.exists():
        return None
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        con.set_busy_timeout(2000)
        return con.execute(
            "SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE f.date >= ? AND NOT EXISTS (SELECT 1 FROM vectors v "
            "WHERE v.chunk_id = c.id AND v.model = ?)",
            (since, FULL_KEY),
        ).fetchone()[0]
    except apsw.Error:
        return None
    finally:
        con.close()


TOPIC_ROOT = "notes"  # the extra path's folder name: its files show as notes/...


def add_topics(tmp: Path, equal: float | None) -> tuple[Path, list[tuple[str, str, str]]]:
    """The topic notes in ``tmp/notes``, three years old (or all at ``equal``), and their
    questions: ``(kind, question, result path of its topic note)``."""
    root = tmp / TOPIC_ROOT
    make_topics(root, fillers=4)
    old = equal if equal is not None else time.time() - 3 * 365 * 86400
    for path in root.rglob("*.md"):
        os.utime(path, (old, old))
    asks = [("asked", t["asked"], f"{TOPIC_ROOT}/Topics/{t['title']}.md") for t in TOPICS]
    asks += [("unworded", q, note.replace("vault/", f"{TOPIC_ROOT}/", 1))
             for q, note in unworded(root)]  # fmt: skip
    return root, asks


def scramble(vault: Path, when: float) -> None:
    """What a git checkout of a vault of code notes looks like: every daily note gets a
    line of commit hashes, hex addresses and numbers, and every file one mtime."""
    rng = random.Random(7)
    for path in sorted(vault.rglob("*.md")):
        tokens = [f"{rng.getrandbits(160):040x}"[: rng.choice((7, 12, 40))] for _ in range(3)]
        tokens += [f"0x{rng.getrandbits(48):012x}", str(rng.randint(10**5, 10**9))]
        with path.open("a", encoding="utf-8") as f:
            f.write(f"\nBuild {' '.join(tokens)}\n")
        os.utime(path, (when, when))


def topic_vectors(db: Path) -> dict:
    """Chunks of the topic notes, and how many have the full model's vectors."""
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        con.set_busy_timeout(2000)
        total, full = con.execute(
            "SELECT count(*), count(v.chunk_id) FROM chunks c JOIN files f ON f.id = c.file_id "
            "LEFT JOIN vectors v ON v.chunk_id = c.id AND v.model = ? WHERE f.path LIKE ?",
            (FULL_KEY, f"{TOPIC_ROOT}/Topics/%"),
        ).fetchone()
        return {"topic_chunks": total, "topic_chunks_full": full}
    except apsw.Error:
        return {}
    finally:
        con.close()


def ask(client: Client, asks: list[tuple[str, str, str]], status: dict, db: Path) -> dict:
    """R@5 of each kind of question in the default mode and in keyword mode, now."""
    out: dict = {**topic_vectors(db), "interim": (status.get("embedding") or {}).get("interim")}
    for mode in ("auto", "keyword"):
        for kind in dict.fromkeys(k for k, _, _ in asks):
            hits, said, unready, modes, shares = 0, 0, 0, {}, []
            asked = [(q, note) for k, q, note in asks if k == kind]
            for question, note in asked:
                answer = client.call("memory_search", {"query": question, "mode": mode,
                                                       "max_results": 5})  # fmt: skip
                hits += note in [r["path"] for r in answer["results"][:5]]
                said += answer.get("warning") is not None
                unready += "meaning not ready" in (answer.get("warning") or "")
                # What share of the results had the full model's vectors (None: all did).
                shares.append(answer["index"].get("meaning_share"))
                modes[answer["mode"]] = modes.get(answer["mode"], 0) + 1
            out[f"{mode}_{kind}_r5"] = round(hits / len(asked), 3)
            out[f"{mode}_{kind}_n"] = len(asked)
            if mode == "auto":
                out[f"auto_{kind}_warned"] = said
                out[f"auto_{kind}_said_not_ready"] = unready  # of the warned, these
                out[f"auto_{kind}_meaning_share_said"] = sum(x is not None for x in shares)
                out[f"auto_{kind}_modes"] = modes
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--minutes", type=float, default=12.0, help="how long to watch at most")
    ap.add_argument("--no-interim", action="store_true", help="embeddings.interim: false")
    ap.add_argument("--paraphrase", action="store_true", help="ask the topic questions")
    ap.add_argument("--equal-mtimes", action="store_true", help="one mtime, hash-like tokens")
    ap.add_argument("--at", default="1,5,15", help="--paraphrase: minutes after the first pass")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    name = "first-hour-nointerim" if args.no_interim else "first-hour"
    out = args.out or HERE / "results" / f"{name}.json"
    tmp = Path(tempfile.mkdtemp(prefix="memd-first-hour-"))
    vault = tmp / "vault"
    make_vault(vault, args.files)
    dates = sorted(p.stem for p in (vault / "memory").glob("*.md"))
    since = dates[-7]  # the newest 7 days of notes
    interim = "false" if args.no_interim else "true"
    extra = f"embeddings: {{provider: local, interim: {interim}}}\nreview: {{enabled: false}}\n"
    equal = time.time() - 86400 if args.equal_mtimes else None
    if equal is not None:
        scramble(vault, equal)
    topic_asks: list[tuple[str, str, str]] = []
    at = [float(m) * 60 for m in args.at.split(",")] if args.paraphrase else []
    if args.paraphrase:
        topics, topic_asks = add_topics(tmp, equal)
        extra += f"extra_paths: [{topics}]\n"
        args.minutes = max(args.minutes, max(at) / 60 + 3)
    daemon, sock = start_daemon(tmp, "fh", vault, extra)
    state, log = tmp / "fh-state", tmp / "fh-state" / "memd.log"
    db = state / "index-default.sqlite"
    result: dict = {"benchmark": "first-hour", "files": args.files, "interim": not args.no_interim,
                    "equal_mtimes": args.equal_mtimes}  # fmt: skip
    asked: list[dict] = []  # --paraphrase: the answers at each of ``at``
    marks: dict[str, float] = {}
    latencies: list[float] = []
    samples: list[dict] = []
    asks = queries(400)
    started = time.monotonic()
    last_status: dict = {}
    next_sample = 0.0
    try:
        while (elapsed := time.monotonic() - started) < args.minutes * 60:
            if daemon.poll() is not None:
                raise SystemExit(f"memd exited with {daemon.returncode}")
            try:
                with Client(sock, timeout=30) as client:
                    last_status = status = client.call("status")
                    if status["files"] >= args.files and not status.get("indexing"):
                        marks.setdefault("keyword_ready_s", elapsed)
                    ready = marks.get("keyword_ready_s")
                    if (
                        ready is not None
                        and len(asked) < len(at)
                        and elapsed - ready >= at[len(asked)]
                    ):
                        asked.append({"after_first_pass_s": round(elapsed - ready),
                                      **ask(client, topic_asks, status, db)})  # fmt: skip
                        print(f"{elapsed:6.0f} s  asked: {asked[-1]}", flush=True)
                        continue
                    if "keyword_ready_s" in marks and "full_s" not in marks:
                        t = time.perf_counter()
                        client.call("memory_search", {"query": asks[len(latencies) % 400]})
                        latencies.append(time.perf_counter() - t)
            except (MemdError, OSError):
                time.sleep(0.5)
                continue
            embedding = status.get("embedding") or {}
            recent_due = "keyword_ready_s" in marks and "recent_full_s" not in marks
            if recent_due and recent_without_vectors(db, since) == 0:
                marks["recent_full_s"] = elapsed
            tier = embedding.get("interim")
            if tier and tier["total"] and tier["done"] >= tier["total"]:
                marks.setdefault("every_chunk_s", elapsed)
            if at and len(asked) == len(at):
                break  # every question asked: the rest is the run without --paraphrase
            if "keyword_ready_s" in marks and status.get("pending_embeddings") == 0:
                marks.setdefault("full_s", elapsed)
                marks.setdefault("every_chunk_s", elapsed)
                break
            if elapsed >= next_sample:
                next_sample = elapsed + 30
                snap = snapshot(daemon.pid, state, log)
                samples.append({"t_s": round(elapsed), "rss_mb": snap["rss_mb"],
                                "embedding": embedding})  # fmt: skip
                print(f"{elapsed:6.0f} s  rss {snap['rss_mb']:6.1f} MB  {embedding}", flush=True)
            time.sleep(0.5)
    finally:
        daemon.terminate()
        daemon.wait(30)
    embedding = last_status.get("embedding") or {}
    result.update({k: round(v, 1) for k, v in marks.items()})
    if "full_s" not in marks and embedding.get("eta_s") is not None:
        result["full_eta_s"] = round(time.monotonic() - started + embedding["eta_s"])
    result["chunks"] = last_status.get("chunks")
    result["embedded_at_end"] = embedding.get("done")
    result["full_per_s_at_end"] = embedding.get("per_s")
    if latencies:
        result["search_during_backfill_p50_ms"] = round(1000 * statistics.median(latencies), 1)
        result["search_during_backfill_p95_ms"] = round(1000 * percentile(latencies, 95), 1)
        result["searches"] = len(latencies)
    result["rss_mb_max"] = max((s["rss_mb"] for s in samples), default=None)
    result["rss_mb_end"] = samples[-1]["rss_mb"] if samples else None
    if asked:
        result["paraphrase"] = asked
    result["samples"] = samples
    result["run_at"] = dt.datetime.now().isoformat(timespec="seconds")
    write_result(result, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
