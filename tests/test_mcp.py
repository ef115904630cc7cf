import asyncio
import json
import os
import re
import sys

import pytest

import memd

pytest.importorskip("mcp")

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def run_session(config_path, env, steps, errlog=None):
    """Start `memd mcp` as a host would and run ``steps(session)`` against it."""

    async def main():
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "memd", "--config", str(config_path), "mcp"],
            env=env,
        )
        streams = stdio_client(params, errlog or sys.stderr)
        async with streams as (read, write), ClientSession(read, write) as session:
            session.started = await session.initialize()  # the server's name and version
            return await steps(session)

    return asyncio.run(asyncio.wait_for(main(), 60))


def payload(result):
    if getattr(result, "structured_content", None):
        data = result.structured_content
        return data.get("result", data)
    return json.loads(result.content[0].text)


@pytest.fixture
def host(tmp_path, ws):
    ws.write("MEMORY.md", "# Memory\n\n## Decisions\n- We use Postgres 16 for the main database.\n")
    config = tmp_path / "memd.yaml"
    config.write_text(
        f"workspace: {ws.root}\nstate_dir: {tmp_path / 'state'}\n"
        f"socket: {tmp_path / 'run' / 'memd.sock'}\nembeddings: {{provider: none}}\n"
    )
    return config, {**os.environ, "HOME": str(tmp_path)}


def test_tools_are_listed_with_schemas(host):
    async def steps(session):
        return session.started, (await session.list_tools()).tools

    started, listed = run_session(*host, steps)
    assert started.server_info.name == "memd"
    assert started.server_info.version == memd.__version__
    tools = {t.name: t for t in listed}
    assert set(tools) == {
        "memory_search", "memory_get", "memory_flush", "memory_flush_prompt", "memory_store",
        "memory_forget", "memory_list", "memory_review", "memory_review_apply",
    }  # fmt: skip
    search = tools["memory_search"]
    assert "query" in search.input_schema["properties"]
    assert search.input_schema["required"] == ["query"]
    assert "meaning" in search.description
    for tool in tools.values():  # one or two sentences: when to use it, what comes back
        sentences = re.findall(r"[.!?](?:\s|$)", tool.description.replace("e.g.", "eg"))
        assert 1 <= len(sentences) <= 2, (tool.name, tool.description)
        assert "Returns" in tool.description, tool.name
    # memory_flush names the fields of an entry, in its schema and its description.
    flush = tools["memory_flush"]
    entry_ref = flush.input_schema["properties"]["entries"]["items"]["$ref"].rsplit("/", 1)[1]
    entry = flush.input_schema["$defs"][entry_ref]
    assert set(entry["properties"]) == {"text", "title", "target"}
    assert entry["required"] == ["text"]
    assert entry["properties"]["target"]["enum"] == ["daily", "core"]
    assert "{text, title?, target?}" in flush.description


def test_results_are_compact_json_and_keys_can_be_listed(host):
    async def steps(session):
        stored = await session.call_tool("memory_store", {"key": "editor", "content": "helix"})
        listed = await session.call_tool("memory_list", {})
        prompt = await session.call_tool("memory_flush_prompt", {})
        return stored, listed, prompt

    stored, listed, prompt = run_session(*host, steps)
    text = listed.content[0].text
    assert text == json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
    assert not listed.structured_content  # the object once, not twice
    assert json.loads(stored.content[0].text)["path"] == "MEMORY.md"
    (entry,) = json.loads(text)["entries"]
    assert (entry["key"], entry["value"], entry["path"]) == ("editor", "helix", "MEMORY.md")
    assert set(json.loads(prompt.content[0].text)) == {"system", "user", "target"}


def test_search_flush_get_without_a_daemon(host):
    async def steps(session):
        found = payload(await session.call_tool("memory_search", {"query": "postgres"}))
        flushed = payload(
            await session.call_tool(
                "memory_flush", {"entries": [{"text": "The wombat migration is done."}]}
            )
        )
        again = payload(await session.call_tool("memory_search", {"query": "wombat"}))
        read = payload(
            await session.call_tool("memory_get", {"path": "MEMORY.md", "from_line": 3, "lines": 1})
        )
        return found, flushed, again, read

    found, flushed, again, read = run_session(*host, steps)
    assert found["results"][0]["citation"] == "MEMORY.md#L1-L4"
    assert again["results"][0]["path"] == flushed["written"][0]["path"]
    assert read["text"] == "## Decisions\n"


def test_search_takes_the_config_s_max_results(host, ws):
    """A tool call that names no ``max_results`` gets the config's ``search.max_results``,
    as a socket request does."""
    config, env = host
    for day in range(1, 10):
        ws.write(f"memory/2026-01-0{day}.md", f"# 2026-01-0{day}\n- The wombat count was {day}.\n")
    config.write_text(config.read_text() + "search: {max_results: 8, min_score: 0}\n")

    async def steps(session):
        return payload(await session.call_tool("memory_search", {"query": "wombat count"}))

    assert len(run_session(config, env, steps)["results"]) == 8


def test_bad_tool_calls_are_errors_and_the_server_goes_on(host):
    async def steps(session):
        bad_path = await session.call_tool("memory_get", {"path": "../etc/passwd"})
        bad_type = await session.call_tool("memory_search", {"query": "x", "max_results": "lots"})
        bad_entry = await session.call_tool("memory_flush", {"entries": [{"txt": "typo"}]})
        unknown = await session.call_tool("no_such_tool", {})
        good = await session.call_tool("memory_search", {"query": "postgres"})
        return bad_path, bad_type, bad_entry, unknown, good

    bad_path, bad_type, bad_entry, unknown, good = run_session(*host, steps)
    assert bad_entry.is_error and "text" in bad_entry.content[0].text
    assert bad_path.is_error and "may not contain '..'" in bad_path.content[0].text
    assert bad_type.is_error
    assert unknown.is_error
    assert not good.is_error and payload(good)["results"]


def test_tools_go_through_a_running_daemon(host, serve, ws):
    _, env = host
    d = serve()  # the same workspace, its own socket
    env = {**env, "MEMD_CONFIG": str(d.config_path)}

    async def steps(session):
        return payload(await session.call_tool("memory_search", {"query": "postgres"}))

    found = run_session(d.config_path, env, steps)
    assert found["results"]
    assert '"method": "memory_search"' in d.log()  # answered by the daemon


def test_a_daemon_of_another_config_is_not_used(host, serve, tmp_path):
    """The tools answer from this config's index, and the log says which daemon was passed
    over (here: one with another state folder on the socket this config names)."""
    config, env = host
    d = serve()
    config.write_text(
        config.read_text()
        .replace(str(tmp_path / "run" / "memd.sock"), str(d.socket))
        .replace(f"state_dir: {tmp_path / 'state'}", f"state_dir: {tmp_path / 'mcp-state'}")
    )

    async def steps(session):
        return payload(await session.call_tool("memory_search", {"query": "postgres"}))

    with open(tmp_path / "mcp-stderr.log", "w") as errlog:
        found = run_session(config, env, steps, errlog)
    assert found["results"][0]["path"] == "MEMORY.md"
    assert '"method": "memory_search"' not in d.log()  # not asked
    assert "daemon_not_used" in (tmp_path / "mcp-stderr.log").read_text()
