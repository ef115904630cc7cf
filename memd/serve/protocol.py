"""What the protocol reference says about each method beyond what its code shows.

``docs/gen_reference.py`` reads each method's parameters, types and defaults from the
handlers in ``METHODS`` themselves, its answer fields from the records it returns, and
its error codes from ``memd.client.CODES``; this module adds the words: what a method is
for, what a parameter means, the errors it can raise and an example request. A method or
parameter with no words here stops the generator, so the page cannot fall behind.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memd.agent.context import Said
from memd.errors import (
    BackendUnavailable,
    IndexCorrupt,
    MemdError,
    NotFound,
    PathRefused,
    StoreError,
    WorkspaceMissing,
    WriteError,
)
from memd.records import (
    FlushAnswer,
    FlushPrompt,
    ForgetAnswer,
    IndexReport,
    KeyList,
    Lines,
    ReviewAnswer,
    ReviewApplied,
    SearchAnswer,
    Status,
    StoreAnswer,
)

# A parameter's meaning wherever it appears; a method's own ``params`` say more.
PARAMS = {
    "workspace": "the workspace's name (see `workspaces` in the config); the first when unset",
    "date": "the daily note's day, YYYY-MM-DD; today when unset",
}

WHEN_READ = ((StoreError, "the index cannot be read"), (IndexCorrupt, "the index is damaged"))
WHEN_WRITE = ((WriteError, "the file could not be written; it is as it was"),)


@dataclass(frozen=True)
class Method:
    """One method's words: ``answer`` is the record it returns, or its fields' meanings."""

    summary: str
    answer: type | dict[str, str]
    example: dict
    params: dict[str, str] = field(default_factory=dict)
    errors: tuple[tuple[type[MemdError], str], ...] = ()
    required: tuple[str, ...] = ()  # parameters checked as required after they are read


METHODS = {
    "health": Method(
        "Who is serving: a client checks that it reached the daemon it meant.",
        {
            "ok": "always true",
            "version": "memd's version",
            "pid": "the daemon's process id",
            "config": "the config file it read (null: the defaults)",
            "state_dir": "its state folder",
            "socket": "the socket it listens on",
            "workspaces": "each workspace's name and folder",
            "vectors": "where its embeddings come from (`local multilingual-e5-small-q4`),"
            " or `none (keyword search only)`",
        },
        {},
    ),
    "status": Method(
        "Counts, freshness and where things live, for people and monitoring (`memd status`).",
        Status,
        {},
        errors=WHEN_READ,
    ),
    "reindex": Method(
        "Index what changed since the last pass, or every file again (`memd index`).",
        IndexReport,
        {},
        {"full": "re-read every file, not only those whose size or mtime changed"},
        WHEN_READ,
    ),
    "memory_search": Method(
        "Search the notes by words and meaning; results best first with line-exact citations.",
        SearchAnswer,
        {"query": "which database do we use", "max_results": 2},
        {
            "query": "what to look for, in plain words (cut to 4,000 characters and 64 words)",
            "max_results": "results at most, 1 to 100; `search.max_results` when unset",
            "min_score": "drop results below this score (0 to 1): a hard cut, no weak results",
            "min_results": "fill up to this many with weak matches, labelled `weak` (0: none);"
            " `search.min_results` when unset",
            "mode": "`auto`, `hybrid`, `keyword` or `vector`; `auto` uses vectors when there"
            " are any",
            "paths": "only files matching these globs (at most 64, of 512 characters each)",
            "tags": "only notes with these tags (`#tag` or front matter `tags:`)",
            "since": "only dated notes from this day on, YYYY-MM-DD",
            "until": "only dated notes up to this day, YYYY-MM-DD",
            "now": "the ISO date-time that time words (`last week`) are read against",
            "sources": "`memory` (notes) and/or `sessions` (past transcripts)",
            "scope": "`local`, or `team`: every host's published workspaces too",
            "wait_fresh": "seconds (0 to 10) to wait for the index to hold every edit made"
            " so far before searching",
            "all_chunks": "every matching chunk of a note, not only its best (default: one"
            " place per note, the others counted in `more_chunks`)",
        },
        (*WHEN_READ, (BackendUnavailable, "a `vector` search and the embedding endpoint failed")),
        ("query",),
    ),
    "memory_get": Method(
        "Read lines of a note, e.g. more context around a citation.",
        Lines,
        {"path": "MEMORY.md", "from": 1, "lines": 4},
        {
            "path": "workspace-relative, as results cite it",
            "from": "the first line, 1-based; past the end gives empty text",
            "lines": "how many lines",
            "host": "another host's published note (a team search names it); `workspace`"
            " then names that host's workspace",
        },
        (
            (NotFound, "no such file, at a path memd would index (`memory/x.md`)"),
            (
                PathRefused,
                "the path is outside the files memd indexes (`../x`, or a"
                " top-level `x.md` that is not `MEMORY.md` in an agent's workspace)",
            ),
        ),
    ),
    "memory_flush": Method(
        "Append notes that must outlive a context: to the daily note, or to MEMORY.md.",
        FlushAnswer,
        {
            "entries": [{"text": "We moved the nightly backup to 02:00.", "title": "Backups"}],
            "flush_id": "session-42-compact",
            "date": "2026-03-05",
        },
        {
            "entries": "1 to 100 of `{text, title?, target?}` (or plain strings); `target` is"
            " `daily` (default) or `core` (MEMORY.md)",
            "flush_id": "an id for this flush: a retry with the same id writes nothing again",
            "transcript": "a transcript (text, or a list of `{role, content}`) the configured"
            " `flush.llm` picks notes from, instead of `entries`",
        },
        (*WHEN_WRITE, (BackendUnavailable, "`flush.llm` failed on a transcript")),
    ),
    "memory_flush_prompt": Method(
        "The prompt an agent runs over its own context to decide what to flush.",
        FlushPrompt,
        {"date": "2026-03-05"},
    ),
    "memory_store": Method(
        "Keep one fact under a key, as a line memd owns; storing the key again replaces it.",
        StoreAnswer,
        {"key": "editor", "content": "helix, with the default keymap"},
        {
            "key": "a short name, one line without `**`",
            "content": "the value, one line",
            "category": "`core` (MEMORY.md), `daily` (today's note) or a name (`memory/NAME.md`)",
        },
        WHEN_WRITE,
    ),
    "memory_list": Method(
        "The facts kept under keys, with their values, files and lines.",
        KeyList,
        {},
        {"category": "only this category"},
    ),
    "memory_forget": Method(
        "Remove the line a key holds.",
        ForgetAnswer,
        {"key": "editor"},
        {"key": "the key, as stored", "category": "only in this category"},
        WHEN_WRITE,
    ),
    "memory_review": Method(
        "Proposals: daily-note statements to promote into MEMORY.md, facts that changed"
        " (conflict), lines said twice (duplicate).",
        ReviewAnswer,
        {"kind": "promote"},
        {
            "since": "only daily notes from this day on, YYYY-MM-DD",
            "kind": "`promote`, `conflict` or `duplicate`, or a list of them; all when unset",
        },
        WHEN_READ,
    ),
    "memory_review_apply": Method(
        "Apply proposals by id (nothing a person wrote changes), or dismiss them for good. An id"
        " no longer proposed (a cited line changed) comes back with an `error` of its own.",
        ReviewApplied,
        {"ids": ["PROPOSAL_ID"]},
        {"ids": "proposal ids to apply", "dismiss": "proposal ids to hide from later reviews"},
        WHEN_WRITE,
    ),
    "memory_context": Method(
        "Memory for a session's start (`memd context`): MEMORY.md's weightiest lines, the"
        " last days' notes and what the notes say about the project in `cwd`.",
        Said,
        {"cwd": "/home/me/projects/billing", "source": "startup", "budget": 300},
        {
            "cwd": "the session's working folder: notes naming its project come first",
            "source": "`startup`, `resume`, `clear` or `compact` (after a compaction the"
            " newest notes lead)",
            "budget": "tokens at most, 50 to 20,000",
            "now": "the ISO date-time the session starts at (default: the clock); what is"
            " coming up and the recent days are read as of it",
        },
        WHEN_READ,
    ),
    "memory_recall": Method(
        "Notes for a prompt, before the model sees it (`memd recall`): strong matches only.",
        Said,
        {"prompt": "which database do we use?", "budget": 200},
        {
            "prompt": "the user's prompt",
            "budget": "tokens at most, 50 to 20,000",
            "now": "the ISO date-time time words in the prompt are read against",
        },
        WHEN_READ,
    ),
    "memory_flush_hook": Method(
        "A flush from an agent host's hook (`memd flush --hook`): what is new in the"
        " session's transcript since its last hook flush.",
        {
            "flushed": "whether anything was written; when true, the fields of `memory_flush`'s"
            " answer follow",
        },
        {"hook": {"session_id": "4f1c2a", "hook_event_name": "PreCompact"}},
        {
            "hook": "the hook's JSON as the host sent it: `session_id`, `transcript_path`,"
            " `hook_event_name`",
            "host": "the host's name, written into the entry",
        },
        (*WHEN_WRITE, (BackendUnavailable, "`flush.llm` failed")),
    ),
}

# Every method may also answer these.
COMMON_ERRORS = (
    (WorkspaceMissing, "the workspace folder is gone or unreadable"),
    (MemdError, "anything else; the message says what failed"),
)

# What a record's field means where memd.records says nothing beside it.
FIELDS = {
    "Status.version": "memd's version",
    "Status.workspace": "the workspace's name",
    "Status.path": "its folder",
    "Status.roots": "every folder indexed: the workspace and its extra paths",
    "Status.files": "files indexed",
    "Status.chunks": "chunks (heading sections) indexed",
    "Status.embedded_chunks": "chunks with a vector",
    "Status.pending_files": "changed files waiting to be indexed",
    "Status.pending_embeddings": "chunks waiting for a vector",
    "Status.provider": "the embedding provider (`none`: keyword search only)",
    "Status.model": "the embedding model",
    "Status.embeddings": "what the embedder is doing: idle, embedding, cooling down after an error",
    "Status.generation": "goes up by one with every index pass that changed something",
    "Status.last_indexed_at": "when the last pass ended (UTC)",
    "Status.watcher": "running, restarting, waiting for folder, or not running",
    "Status.indexing": "while a whole-workspace pass runs: `{done, total}` files",
    "Status.database": "the index file",
    "Status.database_bytes": "its size",
    "Status.socket": "the socket of the answering daemon",
    "Status.team": "publishing to the team store: host, state, outbox, published_at",
    "Status.skipped_files": "files not indexed, each `path (why)`; the rest are",
    "Status.current": "`pending` when answered without a daemon while what later notes "
    "replaced is still being found after a `memd index`",
    "Status.finishing": "then the process finding it: `{pid, since, queued}`",
    "SearchAnswer.current": "`pending` when answered without a daemon while what later notes "
    "replaced was still being found after a `memd index`: a result may not carry its "
    "`superseded_by` yet",
    "ReviewAnswer.current": "`pending` as in a search's answer",
    "IndexReport.added": "files new to the index",
    "IndexReport.changed": "files re-read",
    "IndexReport.removed": "files gone",
    "IndexReport.unchanged": "files skipped as unchanged",
    "IndexReport.skipped": "files that could not be read (see `warnings`)",
    "IndexReport.chunks": "chunks written",
    "IndexReport.cancelled": "the pass was stopped before it ended",
    "IndexReport.seconds": "how long it took",
    "IndexReport.warnings": "what was skipped and why",
    "SearchAnswer.results": "best first",
    "SearchAnswer.mode": "what ran: `hybrid`, `keyword` or `vector`",
    "SearchAnswer.provider": "the embedding provider",
    "SearchAnswer.model": "the embedding model",
    "SearchAnswer.index": "how fresh the index was",
    "SearchAnswer.warning": "what the caller should know: a query cut short, an index"
    " that did not catch up, meaning not ready while a large back-fill runs",
    "SearchAnswer.time": "how the query's time words were read",
    "SearchAnswer.best_score": "with `below_floor`: the best score a dropped candidate had",
    "SearchResult.workspace": "with `host`: the workspace of that host the note is in",
    "SearchResult.superseded": "how the later statement was found: `confirmed` (a change"
    " word, and the nearest in meaning: ranked lower), `stated` (a change word) or `likely`"
    " (the same subject with another value)",
    "SearchResult.now": "with `superseded_by`: what the later statement says",
    "Lines.published_at": "with `host`: when that host published these lines (UTC)",
    "FlushAnswer.warning": "written, but not yet searchable, or the flush id not recorded"
    " (a retry may write again): what went wrong",
    "StoreAnswer.warning": "written, but not yet searchable: what went wrong",
    "ForgetAnswer.warning": "removed, but the index not yet updated: what went wrong",
    "FlushPrompt.review_waiting": "review proposals waiting (`memd review`), when any",
    "ReviewAnswer.warning": "what the review could not check, and why",
    "SearchResult.path": "workspace-relative",
    "SearchResult.start_line": "first line of the chunk, 1-based",
    "SearchResult.end_line": "last line, inclusive",
    "SearchResult.score": "0 to 1, higher is better",
    "SearchResult.snippet": "the chunk's text, cut",
    "SearchResult.heading": "the chunk's heading path (`# Memory > ## Database`)",
    "SearchResult.source": "`core` (MEMORY.md), `daily`, `extra` or `sessions`",
    "SearchResult.citation": "`path#Lstart-Lend`",
    "Freshness.generation": "as in `status`",
    "Freshness.pending_files": "changed files not yet indexed",
    "Freshness.pending_embeddings": "chunks still without a vector",
    "Freshness.stale": "edits wait to be indexed, or nothing watches the files",
    "Freshness.last_indexed_at": "when the last pass ended (UTC)",
    "TimeWindow.start": "the first day (null: open)",
    "TimeWindow.end": "the last day (null: open)",
    "TimeWindow.matched": "the time words read",
    "Lines.path": "workspace-relative",
    "Lines.start": "the first line given",
    "Lines.lines": "how many lines were asked for",
    "Lines.text": "the lines",
    "Lines.total_lines": "lines in the file",
    "Lines.truncated": "there is more after these lines",
    "Lines.next_from": "the `from` that reads on (null at the end)",
    "FlushAnswer.written": "where each entry landed",
    "FlushAnswer.skipped": "entries already in the note, with why",
    "FlushAnswer.duplicate": "the `flush_id` was seen before: this is that flush's answer",
    "StoreAnswer.replaced": "an older line for the key was replaced",
    "ForgetAnswer.removed": "the key had a line",
    "ForgetAnswer.paths": "files it was removed from",
    "KeyList.count": "how many entries",
    "FlushPrompt.system": "the system prompt",
    "FlushPrompt.user": "the user prompt",
    "FlushPrompt.target": "where the notes land",
    "ReviewAnswer.count": "proposals waiting",
    "ReviewAnswer.reviewed_at": "when the review ran (UTC)",
    "ReviewAnswer.files": "files read",
    "ReviewAnswer.dismissed": "proposals hidden for good",
    "ReviewAnswer.seconds": "how long it took",
    "ReviewApplied.dismissed": "the ids dismissed",
    "Said.text": "the lines for the model, each with its `path#line`",
    "Said.lines": "how many lines",
    "Said.tokens": "what they cost",
    "Said.current": "`pending` when read without a daemon while what later notes replaced "
    "was still being found after a `memd index` (a line shown may have been replaced)",
    "Written.path": "workspace-relative",
    "Written.start_line": "first line written, 1-based",
    "Written.end_line": "last line written, inclusive",
    "StoreAnswer.path": "the file the key's line is in",
    "StoreAnswer.start_line": "its line",
    "StoreAnswer.end_line": "the same line",
    "KeyEntry.key": "the key",
    "KeyEntry.path": "its file",
    "KeyEntry.line": "its line",
    "KeyEntry.category": "`core`, `daily` or the file's name",
    "KeyEntry.value": "what it holds",
    "KeyList.entries": "every key found",
    "ReviewAnswer.proposals": "best first",
    "Proposal.id": "stable while the lines it cites stay the same",
    "Proposal.reason": "why it is proposed",
    "Proposal.score": "how sure, 0 to 1",
    "SearchRequest.query": "what to look for",
    "SearchRequest.max_results": "results at most",
    "SearchRequest.mode": "`auto`, `hybrid`, `keyword` or `vector`",
    "SearchRequest.paths": "only files matching these globs",
    "SearchRequest.tags": "only notes with these tags",
    "SearchRequest.since": "only dated notes from this day, YYYY-MM-DD",
    "SearchRequest.until": "only dated notes up to this day",
    "Entry.text": "the note",
    "Entry.title": "its heading; its first words when unset",
}
