"""memd's tools over MCP stdio, for agent hosts (Claude Desktop, Cursor, Codex, ...).

The tools call the running daemon when there is one (one warm index shared by every agent
session), else the index directly. A bad tool call comes back as an MCP tool error; the
server keeps serving.
"""

from __future__ import annotations

from typing import Any, Literal

from memd.config import Config
from memd.errors import MemdError
from memd.router import Router

INSTRUCTIONS = """\
memd is this agent's long-term memory: Markdown notes (MEMORY.md for curated facts, \
memory/YYYY-MM-DD.md for daily notes). Search it before answering questions about past \
work, decisions, preferences or people; cite results by their citation (path#Lstart-Lend) \
and read more with memory_get. Before your context is compacted, save what must survive \
with memory_flush."""


def build_server(config: Config, router: Router | None = None, workspace: str | None = None) -> Any:
    """An ``MCPServer`` exposing memd's tools (needs ``pip install 'memd[mcp]'``);
    ``workspace`` is the default for calls that name none."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError as exc:
        raise MemdError("the MCP SDK is not installed; pip install 'memd[mcp]'") from exc
    router = router or Router(config)
    server = MCPServer(name="memd", instructions=INSTRUCTIONS)

    def call(method: str, params: dict[str, Any]) -> dict:
        # The one place memd errors become MCP tool errors the model can read and act on.
        if params.get("workspace") is None:
            params["workspace"] = workspace
        try:
            return router.call(method, params)
        except MemdError as exc:
            raise ToolError(str(exc)) from exc

    @server.tool(
        description=(
            "Search the agent's Markdown memory by meaning and keywords. Returns chunks with "
            "path, line range, citation, heading, snippet and score (0-1, best first). Use "
            "plain-language queries; narrow with paths (globs), tags, or since/until dates. "
            "Time words in the query ('last week', 'in March', '昨天') prefer notes of those "
            "days; the answer's 'time' says how they were read. sources: ['memory'] for "
            "notes only, ['sessions'] for past session transcripts only (default both)."
        )
    )
    def memory_search(
        query: str,
        max_results: int = 6,
        min_score: float | None = None,
        mode: Literal["auto", "hybrid", "keyword", "vector"] = "auto",
        paths: list[str] | None = None,
        tags: list[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        now: str | None = None,
        sources: list[Literal["memory", "sessions"]] | None = None,
        workspace: str | None = None,
    ) -> dict:
        return call(
            "memory_search",
            {
                "query": query,
                "max_results": max_results,
                "min_score": min_score,
                "mode": mode,
                "paths": paths,
                "tags": tags,
                "since": since,
                "until": until,
                "now": now,
                "sources": sources,
                "workspace": workspace,
            },
        )

    @server.tool(
        description=(
            "Read lines of a memory file, e.g. around a search result: path as in results "
            "(memory/2026-01-20.md), from = first line (1-based), lines = how many (max 1000). "
            "next_from says where to continue."
        )
    )
    def memory_get(
        path: str, from_line: int = 1, lines: int = 120, workspace: str | None = None
    ) -> dict:
        return call(
            "memory_get", {"path": path, "from": from_line, "lines": lines, "workspace": workspace}
        )

    @server.tool(
        description=(
            "Save notes that must survive context compaction: each entry is appended under a "
            "timestamped heading to today's daily note (target 'daily') or to MEMORY.md (target "
            "'core') and is searchable at once. Give a flush_id to make retries harmless. Save "
            "durable facts, decisions with reasons, preferences and open threads, not chit-chat."
        )
    )
    def memory_flush(
        entries: list[dict[str, str]],
        flush_id: str | None = None,
        date: str | None = None,
        workspace: str | None = None,
    ) -> dict:
        return call(
            "memory_flush",
            {"entries": entries, "flush_id": flush_id, "date": date, "workspace": workspace},
        )

    @server.tool(
        description=(
            "Remember one fact under a key as the line '- **key**: content' (category 'core' = "
            "MEMORY.md, 'daily' = today's note, or a name for memory/<name>.md). Storing a key "
            "again replaces its line."
        )
    )
    def memory_store(
        key: str, content: str, category: str = "core", workspace: str | None = None
    ) -> dict:
        return call(
            "memory_store",
            {"key": key, "content": content, "category": category, "workspace": workspace},
        )

    @server.tool(description="Remove a stored key's line; says whether it existed.")
    def memory_forget(key: str, category: str | None = None, workspace: str | None = None) -> dict:
        return call("memory_forget", {"key": key, "category": category, "workspace": workspace})

    return server


def serve_mcp(config: Config, workspace: str | None = None) -> int:
    """Serve MCP on stdin/stdout until the host closes it."""
    config.workspace(workspace)  # an unknown name stops start-up, with the known ones
    router = Router(config)
    try:
        build_server(config, router, workspace).run("stdio")
    finally:
        router.close()
    return 0
