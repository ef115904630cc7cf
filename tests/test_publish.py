"""Publishing a workspace's index to the team store (a real PostgreSQL), local first."""

from __future__ import annotations

import pytest

from memd.errors import StoreError
from memd.index.publish import publish
from memd.memory import Memory
from memd.store.fts import match_query
from memd.store.postgres import PostgresStore


@pytest.fixture
def remote(postgres_dsn, tmp_path):
    store = PostgresStore.open(postgres_dsn, host=f"laptop-{tmp_path.name}", workspace="default")
    yield store
    store.close()


def notes(ws) -> None:
    ws.write("MEMORY.md", "# Memory\n\n## Database\n\nWe picked Postgres 16 for JSONB.\n")
    ws.write("memory/2026-01-20.md", "# 2026-01-20\n\n## Deploy\n\nThe gateway returned 502s.\n")
    ws.write("memory/2026-01-21.md", "# 2026-01-21\n\n## Backups\n\nNightly backup at 02:30.\n")


def run(memory: Memory, remote: PostgresStore):
    db = memory.db
    return publish(db.store, remote, db.vector_key, db.embedder.cache_key)


def remote_vectors(memory: Memory, remote: PostgresStore) -> int:
    return remote.count_vector_rows(memory.db.vector_key)


def test_a_workspace_is_published_whole_then_only_what_changes(openai_config, ws, remote):
    notes(ws)
    memory = Memory(openai_config())
    try:
        memory.index()
        memory.embed_all()
        first = run(memory, remote)
        assert (first.outbox, first.published, first.removed) == (3, 3, 0)
        assert remote.counts() == memory.db.store.counts()
        local_vectors = memory.db.store.count_vector_rows(memory.db.vector_key)
        assert local_vectors > 0 and remote_vectors(memory, remote) == local_vectors
        assert first.vectors == local_vectors
        hits = remote.keyword_search(match_query("gateway"), 5)
        assert [(h.path, h.start_line) for h in hits] == [("memory/2026-01-20.md", 1)]

        again = run(memory, remote)
        assert (again.outbox, again.published, again.vectors) == (0, 0, 0)

        ws.write("memory/2026-01-21.md", "# 2026-01-21\n\n## Backups\n\nMoved to 03:00.\n")
        (ws.root / "MEMORY.md").unlink()
        memory.index()
        memory.embed_all()
        step = run(memory, remote)
        assert (step.outbox, step.published, step.removed) == (2, 1, 1)
        assert remote.files().keys() == memory.db.store.files().keys()
        assert remote.counts() == memory.db.store.counts()
        assert remote.keyword_search(match_query("02:30"), 5) == []
        assert remote_vectors(memory, remote) == memory.db.store.count_vector_rows(
            memory.db.vector_key
        )
    finally:
        memory.close()


def test_vectors_that_arrive_later_are_published_then(openai_config, ws, remote):
    notes(ws)
    memory = Memory(openai_config())
    try:
        memory.index()
        before = run(memory, remote)
        assert before.published == 3 and remote_vectors(memory, remote) == 0
        memory.embed_all()
        after = run(memory, remote)
        assert after.published == 3  # each file again, now with its vectors
        assert remote_vectors(memory, remote) == memory.db.store.count_vector_rows(
            memory.db.vector_key
        )
        assert run(memory, remote).published == 0
    finally:
        memory.close()


def test_a_pass_cut_short_is_run_again_with_nothing_lost_or_doubled(
    openai_config, ws, remote, postgres_dsn
):
    notes(ws)
    memory = Memory(openai_config())
    try:
        memory.index()
        memory.embed_all()
        remote.db.close()  # the database goes away: the connection is gone
        with pytest.raises(StoreError, match="team database"):
            run(memory, remote)
        assert memory.search("gateway").results  # local search carries on
        back = PostgresStore.open(postgres_dsn, remote.host, remote.workspace)
        try:
            report = run(memory, back)
            assert report.published == 3
            assert back.counts() == memory.db.store.counts()
            assert run(memory, back).published == 0
        finally:
            back.close()
    finally:
        memory.close()


def test_a_database_that_does_not_answer_is_a_clear_error(tmp_path):
    dsn = f"postgresql://memd@/memory?host={tmp_path}&connect_timeout=1"
    with pytest.raises(StoreError, match="team database"):
        PostgresStore.open(dsn, "laptop", "default")


def test_session_transcripts_stay_local_unless_asked(openai_config, ws, remote, tmp_path):
    notes(ws)
    memory = Memory(openai_config())
    try:
        memory.index()
        local = memory.db.store
        # A transcript as the index holds one: a file under sessions/.
        meta = local.file_meta("MEMORY.md")
        from dataclasses import replace

        from memd.sources.chunker import Chunk
        from memd.store.rows import chunk_rows

        transcript = replace(meta, path="sessions/main/s1.jsonl", source="session", hash="t")
        with local.transaction():
            local.replace_file(transcript, chunk_rows(transcript, [Chunk(1, 1, "", "secret", 1)]))
        run(memory, remote)
        assert "sessions/main/s1.jsonl" not in remote.files()
        publish(local, remote, memory.db.vector_key, memory.db.embedder.cache_key, transcripts=True)
        assert "sessions/main/s1.jsonl" in remote.files()
    finally:
        memory.close()
