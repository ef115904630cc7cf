"""memd's tools over MCP stdio, for agent hosts (Claude Desktop, Cursor, Codex, ...).

The tools call the running daemon when there is one (one warm index shared by every agent
session), else the index directly. A bad tool call comes back as an MCP tool error; the
server keeps serving. Results are the socket's JSON objects, compact: a model pays for
every token of them.
"""

# No `from __future__ import annotations`: the SDK reads the tools' annotations, which name
# classes defined inside build_server (where the optional SDK is imported).
import json
from typing import Annotated, Any, Literal

from memd import __version__
from memd.config import Config
from memd.errors import MemdError
from memd.log import get_logger
from memd.serve.router import Router

log = get_logger()

INSTRUCTIONS = """\
memd is this agent's long-term memory: Markdown notes (MEMORY.md for curated facts, \
memory/YYYY-MM-DD.md for daily notes). Search it before answering questions about past \
work, decisions, preferences or people; cite results by their citation (path#Lstart-Lend) \
and read more with memory_get. Before your context is compacted, save what must survive \
with memory_flush."""

WORKSPACE = "memory workspace name; omit for the default"


def build_server(config: Config, router: Router | None = None, workspace: str | None = None) -> Any:
    """An ``MCPServer`` exposing memd's tools (needs the ``mcp`` extra of memd's checkout);
    ``workspace`` is the default for calls that name none."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp.types import ToolAnnotations
        from pydantic import BaseModel, ConfigDict, Field
    except ImportError as exc:
        raise MemdError(
            "the MCP SDK is not installed; in memd's checkout: pip install -e '.[mcp]'"
        ) from exc
    router = router or Router(config)
    server = MCPServer(name="memd", version=__version__, instructions=INSTRUCTIONS)
    reads = ToolAnnotations(read_only_hint=True)

    class FlushEntry(BaseModel):
        """One note to save."""

        model_config = ConfigDict(extra="forbid")
        text: str = Field(description="the note: facts, decisions with reasons, preferences")
        title: str | None = Field(None, description="short heading; default: its first words")
        target: Literal["daily", "core"] = Field(
            "daily", description="daily: today's daily note; core: MEMORY.md, for lasting facts"
        )

    def call(method: str, params: dict[str, Any]) -> str:
        # The one place memd errors become MCP tool errors the model can read and act on.
        if params.get("workspace") is None:
            params["workspace"] = workspace
        try:
            result = router.call(method, params)
        except MemdError as exc:
            raise ToolError(str(exc)) from exc
        finally:
            while router.notices:  # a daemon of another config was found and not used
                log.warning("daemon_not_used", reason=router.notices.pop(0))
        return json.dumps(result, ensure_ascii=False, separators=(",", ":"))

    def tool(description: str, read_only: bool = False) -> Any:
        return server.tool(
            description=description,
            annotations=reads if read_only else None,
            structured_output=False,  # the JSON text alone, not the same object twice
        )

    @tool(
        "Search long-term memory by meaning and keywords; use it before answering about past "
        "work, decisions, preferences or people. Returns the best chunks first, each with "
        "citation (path#Lstart-Lend), heading, snippet, a 0-1 score and `match` "
        "('strong', or 'weak': below the relevance floor, shown to fill up), `superseded_by` "
        "on a result whose statement a later note replaced (the citation of the newer one; "
        "`now`: what it says; `superseded`: 'confirmed', 'stated' or 'likely'): trust the "
        "newer one, "
        "`more_chunks` when other chunks of the same note matched (each note has one place "
        "unless all_chunks), `backlinks` on a note with no body (what links to it), "
        "`index` saying "
        "whether recent edits may be missing, and `time` when words such as 'last week' "
        "narrowed the days preferred.",
        read_only=True,
    )
    def memory_search(
        query: Annotated[str, Field(description="what to look for, in plain words")],
        max_results: Annotated[
            int | None, Field(description="results at most (1-100); default from config")
        ] = None,
        min_score: Annotated[
            float | None, Field(description="drop weaker results (0-1); default from config")
        ] = None,
        min_results: Annotated[
            int | None,
            Field(description="fill up to this many with weak matches, labelled (0: none)"),
        ] = None,
        mode: Literal["auto", "hybrid", "keyword", "vector"] = "auto",
        paths: Annotated[
            list[str] | None, Field(description="only files matching these globs")
        ] = None,
        tags: Annotated[list[str] | None, Field(description="only notes with these tags")] = None,
        since: Annotated[str | None, Field(description="only dated notes from YYYY-MM-DD")] = None,
        until: Annotated[str | None, Field(description="only dated notes to YYYY-MM-DD")] = None,
        now: Annotated[
            str | None, Field(description="ISO date-time that time words are read against")
        ] = None,
        sources: Annotated[
            list[Literal["memory", "sessions"]] | None,
            Field(description="['memory'] notes only, ['sessions'] past transcripts only"),
        ] = None,
        scope: Annotated[
            Literal["local", "team"],
            Field(description="'team': every host's published workspaces too"),
        ] = "local",
        all_chunks: Annotated[
            bool,
            Field(description="every matching chunk of a note, not only its best one"),
        ] = False,
        workspace: Annotated[str | None, Field(description=WORKSPACE)] = None,
    ) -> str:
        return call(
            "memory_search",
            {
                "query": query,
                "max_results": max_results,
                "min_score": min_score,
                "min_results": min_results,
                "mode": mode,
                "paths": paths,
                "tags": tags,
                "since": since,
                "until": until,
                "now": now,
                "sources": sources,
                "scope": scope,
                "all_chunks": all_chunks or None,
                "workspace": workspace,
            },
        )

    @tool(
        "Read lines of a memory file, e.g. more context around a search result's citation. "
        "Returns the text, total_lines, and next_from when there is more to read.",
        read_only=True,
    )
    def memory_get(
        path: Annotated[str, Field(description="as in results, e.g. memory/2026-01-20.md")],
        from_line: Annotated[int, Field(description="first line, 1-based")] = 1,
        lines: Annotated[int, Field(description="how many lines, at most 1000")] = 120,
        workspace: Annotated[str | None, Field(description=WORKSPACE)] = None,
        host: Annotated[
            str | None, Field(description="another host's note, as a team search named it")
        ] = None,
    ) -> str:
        params = {"path": path, "from": from_line, "lines": lines, "workspace": workspace}
        return call("memory_get", {**params, "host": host})

    @tool(
        "Save notes that must outlive this context (before compaction, or when a task ends): "
        "each entry {text, title?, target?} is appended under a timestamped heading to today's "
        "daily note, or to MEMORY.md with target 'core'. Returns where each entry landed; "
        "a repeated flush_id writes nothing again."
    )
    def memory_flush(
        entries: Annotated[list[FlushEntry], Field(description="the notes to save")],
        flush_id: Annotated[
            str | None, Field(description="an id for this flush: a retry with it writes nothing")
        ] = None,
        date: Annotated[
            str | None, Field(description="YYYY-MM-DD of the daily note; default today")
        ] = None,
        workspace: Annotated[str | None, Field(description=WORKSPACE)] = None,
    ) -> str:
        plain = [e.model_dump(exclude_none=True) for e in entries]
        return call(
            "memory_flush",
            {"entries": plain, "flush_id": flush_id, "date": date, "workspace": workspace},
        )

    @tool(
        "Get the prompt to run over your own context to decide what to save with memory_flush. "
        "Returns {system, user, target}; an empty reply to it means nothing is worth keeping.",
        read_only=True,
    )
    def memory_flush_prompt(
        date: Annotated[
            str | None, Field(description="YYYY-MM-DD of the daily note; default today")
        ] = None,
        workspace: Annotated[str | None, Field(description=WORKSPACE)] = None,
    ) -> str:
        return call("memory_flush_prompt", {"date": date, "workspace": workspace})

    @tool(
        "Remember one fact under a key as the line '- **key**: content'; storing the key again "
        "replaces it. Returns the file and line it is on."
    )
    def memory_store(
        key: Annotated[str, Field(description="a short name, e.g. editor")],
        content: Annotated[str, Field(description="the value, one line")],
        category: Annotated[
            str,
            Field(description="core: MEMORY.md; daily: today's note; a name: memory/<name>.md"),
        ] = "core",
        workspace: Annotated[str | None, Field(description=WORKSPACE)] = None,
    ) -> str:
        return call(
            "memory_store",
            {"key": key, "content": content, "category": category, "workspace": workspace},
        )

    @tool(
        "Remove the fact stored under a key. Returns whether it existed and the files it was "
        "removed from."
    )
    def memory_forget(
        key: str,
        category: Annotated[str | None, Field(description="only in this category")] = None,
        workspace: Annotated[str | None, Field(description=WORKSPACE)] = None,
    ) -> str:
        return call("memory_forget", {"key": key, "category": category, "workspace": workspace})

    @tool(
        "List the facts stored under keys, with their values, files and lines; check it before "
        "storing a key. Returns {entries: [{key, value, path, line, category}], count}.",
        read_only=True,
    )
    def memory_list(
        category: Annotated[str | None, Field(description="only this category")] = None,
        workspace: Annotated[str | None, Field(description=WORKSPACE)] = None,
    ) -> str:
        return call("memory_list", {"category": category, "workspace": workspace})

    @tool(
        "Review the notes: durable statements of daily notes not yet in MEMORY.md (promote), "
        "statements that disagree, the newer named (conflict), lines said twice (duplicate). "
        "Returns {proposals: [{id, kind, reason, score, citations, text, action}], count}.",
        read_only=True,
    )
    def memory_review(
        since: Annotated[str | None, Field(description="only daily notes from YYYY-MM-DD")] = None,
        kind: Annotated[str | None, Field(description="promote, conflict or duplicate")] = None,
        workspace: Annotated[str | None, Field(description=WORKSPACE)] = None,
    ) -> str:
        return call("memory_review", {"since": since, "kind": kind, "workspace": workspace})

    @tool(
        "Apply review proposals by id (a promotion is appended to MEMORY.md with its source, "
        "a conflict on a key stores the newer value; nothing a person wrote changes), or "
        "dismiss them for good. Returns {applied: [{id, action, path, start_line, duplicate}], "
        "dismissed}; an id applied twice writes once."
    )
    def memory_review_apply(
        ids: Annotated[list[str] | None, Field(description="proposal ids to apply")] = None,
        dismiss: Annotated[list[str] | None, Field(description="proposal ids to hide")] = None,
        workspace: Annotated[str | None, Field(description=WORKSPACE)] = None,
    ) -> str:
        return call("memory_review_apply", {"ids": ids, "dismiss": dismiss, "workspace": workspace})

    return server


def serve_mcp(config: Config, workspace: str | None = None) -> int:
    """Serve MCP on stdin/stdout until the host closes it."""
    import os

    from memd.index.finishlock import wait_bounds

    config.workspace(workspace)  # an unknown name stops start-up, with the known ones
    router = Router(config, waits=wait_bounds(os.environ))  # as the CLI waits for a finish
    try:
        build_server(config, router, workspace).run("stdio")
    finally:
        router.close()
    return 0
