"""The protocol reference page against a live daemon: every method the server has is on
it, and each example request, sent as printed, gets an answer of the printed shape."""

import dataclasses
import importlib
import json
import re
import socket
import sys
from pathlib import Path

from memd.serve.methods import METHODS

REPO = Path(__file__).parent.parent
PAGE = REPO / "docs" / "reference" / "protocol.md"


def gen_protocol():
    if str(REPO / "docs") not in sys.path:
        sys.path.insert(0, str(REPO / "docs"))
    return importlib.import_module("gen_protocol")


def documented() -> dict[str, tuple[str, dict]]:
    """Each method's example request line and answer, as the page prints them."""
    text = PAGE.read_text(encoding="utf-8")
    found = {}
    for section in re.split(r"(?m)^## ", text)[1:]:
        name = section.split("\n", 1)[0].strip()
        blocks = re.findall(r"```json\n(.*?)```", section, re.S)
        if len(blocks) >= 2:
            found[name] = (blocks[0].strip(), json.loads(blocks[1]))
    return found


def shape(value):
    """The keys of an answer, nested, with a list's first item standing for all."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__ if value is not None else None


def optional_keys() -> set[str]:
    """Keys an answer carries only when there is something to say (a daemon's ``review``)."""
    from memd import records

    out = set()
    for cls in vars(records).values():
        if isinstance(cls, type) and dataclasses.is_dataclass(cls):
            for f in dataclasses.fields(cls):
                if f.metadata.get("optional") or f.name in ("warning", "time"):
                    out.add(f.metadata.get("key", f.name))
    return out


def same_shape(doc, live, where="result") -> None:
    if isinstance(doc, dict):
        assert isinstance(live, dict), where
        missing, extra = set(doc) - set(live), set(live) - set(doc)
        assert not missing and extra <= optional_keys(), f"{where}: {missing=} {extra=}"
        for key in doc:
            same_shape(doc[key], live[key], f"{where}.{key}")
    elif isinstance(doc, list) and doc and live:
        same_shape(doc[0], live[0], f"{where}[0]")


def test_every_method_and_parameter_is_on_the_page():
    text = PAGE.read_text(encoding="utf-8")
    gen = gen_protocol()
    pages = documented()
    for name, handler in METHODS.items():
        assert f"\n## {name}\n" in text and name in pages, name
        section = text.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        for param in gen.handler_params(handler):
            assert f"| `{param.name}` |" in section, f"{name}: {param.name}"
    for name in ("memory_context", "memory_recall", "memory_flush_hook", "health", "reindex"):
        assert name in pages


def test_the_parameters_are_read_from_the_handlers():
    """The generator finds what a handler reads, through the helpers it passes ``p`` to."""
    gen = gen_protocol()
    search = {p.name: p for p in gen.handler_params(METHODS["memory_search"])}
    assert {"query", "workspace", "wait_fresh", "mode", "scope", "paths"} <= set(search)
    assert search["mode"].default == "auto" and search["max_results"].default is None
    get = {p.name: p for p in gen.handler_params(METHODS["memory_get"])}
    assert get["path"].required and get["lines"].default == 120
    context = {p.name: p for p in gen.handler_params(METHODS["memory_context"])}
    from memd.agent import CONTEXT_BUDGET

    assert context["budget"].default == CONTEXT_BUDGET  # bound through _budget(p, ...)


def test_each_example_gets_its_printed_answer_from_a_live_daemon(serve, ws):
    gen = gen_protocol()
    for rel, text in gen.NOTES.items():
        ws.write(rel, text, dedent=False)
    d = serve()
    d.wait_for(lambda: d.call("status")["files"] == len(gen.NOTES), what="index", timeout=30)
    d.wait_for(lambda: not d.call("status")["pending_files"], what="a quiet index", timeout=30)
    pages = documented()
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(60)
        sock.connect(str(d.socket))
        reader = sock.makefile("rb")
        for name in gen.RUN_ORDER:
            line, printed = pages[name]
            sock.sendall(line.encode() + b"\n")
            answer = json.loads(reader.readline())
            assert "error" not in answer, (name, answer)
            assert answer["id"] == printed["id"] == 1
            same_shape(printed["result"], answer["result"], name)
    # The same facts, not only the same keys.
    live = {n: json.loads(pages[n][0]) for n in ("memory_search",)}
    assert live["memory_search"]["params"]["query"]
    search = pages["memory_search"][1]["result"]["results"][0]
    assert search["citation"] == d.search("which database do we use")[0]["citation"]


def field_tables() -> dict[str, dict[str, str]]:
    """Each field table of the page (a method's own answer, or a record's), by its section
    title: field -> meaning."""
    text = PAGE.read_text(encoding="utf-8")
    tables = {}
    for section in re.split(r"(?m)^#{2,3} ", text)[1:]:
        rows = re.findall(r"(?m)^\| `(\w+)`(?: \(`\.\w+`\))? \|(?: [^|]* \|)? (.*) \|$", section)
        if "| field |" in section:
            tables[section.split("\n", 1)[0].strip()] = dict(rows)
    return tables


def test_every_answer_field_has_a_meaning_and_every_key_a_row():
    """A client author reads each field's meaning off the page: no row is blank (or only
    "(only when there is one)"), a method's own answer table names every key its example
    answer carries, and no record lists a field the socket never sends."""
    tables = field_tables()
    blank = [
        (title, name)
        for title, rows in tables.items()
        for name, meaning in rows.items()
        if not meaning.replace("(only when there is one)", "").strip()
    ]
    assert not blank, blank
    for name, (_, printed) in documented().items():
        if name in tables:  # an answer described on the method's own section
            extra = set(printed["result"]) - set(tables[name])
            assert not extra, f"{name}'s answer carries {extra}, not in its table"
    assert "skipped_files" not in tables["IndexReport record"]  # kept for status, not sent


def test_each_mcp_tool_takes_its_method_s_parameters():
    """An MCP tool is a method under another shell: the same parameters, so the page's
    table holds for both (``from`` is ``from_line``: it cannot be a Python name)."""
    import ast
    import inspect

    from memd.serve import mcp

    gen = gen_protocol()
    tools = {
        node.name: {a.arg for a in node.args.args}
        for node in ast.walk(ast.parse(inspect.getsource(mcp.build_server)))
        if isinstance(node, ast.FunctionDef) and node.name in gen.mcp_tools()
    }
    assert len(tools) >= 9
    for name, args in tools.items():
        params = {p.name for p in gen.handler_params(METHODS[name])}
        params = {"from_line" if p == "from" else p for p in params}
        params -= {"wait_fresh", "transcript"}  # socket only: a tool call cannot wait or extract
        assert args == params, f"{name}: tool {sorted(args)}, method {sorted(params)}"


def test_each_mcp_tool_s_defaults_are_its_method_s():
    """An MCP tool leaves unset what the socket method leaves unset, so the config's value
    applies to both (a tool that sent ``max_results=6`` hid ``search.max_results``)."""
    import ast
    import inspect

    from memd.serve import mcp

    gen = gen_protocol()
    words = importlib.import_module("memd.serve.protocol").METHODS
    checked = 0
    for node in ast.walk(ast.parse(inspect.getsource(mcp.build_server))):
        if not (isinstance(node, ast.FunctionDef) and node.name in gen.mcp_tools()):
            continue
        args, given = node.args.args, node.args.defaults
        defaults = {
            a.arg: ast.literal_eval(v)
            for a, v in zip(args[len(args) - len(given) :], given, strict=True)
        }
        for p in gen.handler_params(METHODS[node.name]):
            arg = "from_line" if p.name == "from" else p.name
            if arg not in {a.arg for a in args}:
                continue
            method = "required" if p.required or p.name in words[node.name].required else p.default
            if node.name == "memory_flush" and arg == "entries":
                method = "required"  # the tool takes no transcript, so entries are a must
            tool = defaults.get(arg, "required")
            assert tool == method, f"{node.name}.{arg}: tool {tool!r}, method {method!r}"
            checked += 1
    assert checked >= 30


def test_every_public_call_of_memory_and_every_socket_method_is_on_the_library_page():
    """A program finds each of ``Memory``'s public calls and properties on the library
    reference, and, for each socket method, the library call that does the same (or that
    there is none)."""
    from memd.memory import Memory

    page = (REPO / "docs" / "reference" / "library.md").read_text(encoding="utf-8")
    rows = re.findall(r"(?m)^\| `([\w.]+)[(`]", page)
    public = [n for n in vars(Memory) if not n.startswith("_")]
    assert len(public) >= 15
    missing = [n for n in public if n not in rows and f"memory.{n}" not in " ".join(rows)]
    assert not missing, f"Memory's {missing} are on no row of the library reference"
    for method in METHODS:
        assert f"`{method}`" in page, f"{method}: no library call named for it"


def test_every_exported_record_and_error_is_in_the_library_reference():
    import memd

    page = (REPO / "docs" / "reference" / "library.md").read_text(encoding="utf-8")
    for name in memd.__all__:
        thing = getattr(memd, name)
        if name in ("Config", "WorkspaceConfig"):  # the configuration reference has them
            assert "(config.md)" in page
        elif isinstance(thing, type) and dataclasses.is_dataclass(thing):
            assert f"### {name} record" in page, name
        elif isinstance(thing, type) and issubclass(thing, memd.MemdError):
            assert f"`memd.{name}`" in page, name
        elif callable(thing) and not isinstance(thing, type):
            assert f"memd.{name}(" in page, name
    for call in gen_protocol().LIBRARY_CALLS:
        assert f"| `{call}(" in page, call
