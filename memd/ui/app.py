"""The page's web app (Starlette): one route per view, each a thin shell over the calls
the CLI and the socket make (``memory_search``, ``memory_get``, ``status``,
``memory_review_apply``) and over the index reads of ``memd.ui.reading``.

Every request passes ``memd.ui.guard`` first. A view is bookmarkable (its state is in its
address); the script asks ``/api/stamp`` every few seconds and, when the index changed,
fetches the live views again in place, so the timeline and status follow edits without
a reload.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from importlib.resources import files
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from memd.errors import InvalidParams, MemdError, NotFound, PathRefused
from memd.log import get_logger
from memd.ui import pages, reading
from memd.ui.guard import Guard
from memd.ui.notehtml import note_html, note_names

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from memd.memory import Memory

log = get_logger()

MAX_NOTE_LINES = 1_000  # memory_get's most; a longer note shows a part and says so
_BEFORE_CITED = 20  # lines shown above cited lines past that part
SAMPLE_S = 20.0  # the embedding chart's step
_HOUR = 3600.0
_HEADERS = {
    # Nothing but this page's own files: no inline script, no other site, no frames.
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
    "x-frame-options": "DENY",
}
_STATIC = {"ui.css": "text/css", "ui.js": "text/javascript"}


@dataclass
class Backend:
    """What the page reads and does, and through what: ``call`` runs one of the protocol's
    methods (the daemon's own dispatch, or a client of it, or this process's index);
    ``memory`` is the workspace's ``Memory`` whose index the timeline reads; ``daemon`` says
    who serves (None: no daemon runs)."""

    call: Callable[[str, dict], Awaitable[dict]]
    memory: Callable[[], Memory]
    daemon: Callable[[], Awaitable[str | None]]
    workspace: str | None = None
    samples: deque = field(default_factory=lambda: deque(maxlen=int(_HOUR / SAMPLE_S) + 1))
    clock: Callable[[], float] = time.time  # when a sample is taken

    async def ask(self, method: str, **params: Any) -> dict:
        return await self.call(method, {"workspace": self.workspace, **params})

    async def read(self, fn: Callable[..., Any], *args: Any) -> Any:
        """A blocking index read, off the event loop."""
        memory = self.memory()
        return await asyncio.to_thread(fn, memory, *args)

    async def sample(self) -> dict:
        s = await self.ask("status")
        now = self.clock()
        if not self.samples or now - self.samples[-1][0] >= SAMPLE_S / 2:
            total = s["embedded_chunks"] + s["pending_embeddings"]
            self.samples.append((now, s["embedded_chunks"], total))
        while self.samples and self.samples[0][0] < now - _HOUR:
            self.samples.popleft()
        return s


def make_app(backend: Backend, guard: Guard) -> Starlette:
    """The app serving ``backend`` behind ``guard``."""
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
    from starlette.routing import Route

    def html(body: str, code: int = 200) -> Response:
        return HTMLResponse(body, code, headers=_HEADERS)

    async def view(request: Request, title: str, name: str, body: str, code: int = 200,
                   live: bool = False) -> Response:  # fmt: skip
        if request.headers.get("x-memd-fragment"):
            return html(body, code)
        return html(pages.page(title, name, body, await backend.daemon(), live), code)

    async def failed(request: Request, name: str, exc: MemdError) -> Response:
        code = 403 if isinstance(exc, PathRefused) else 404 if isinstance(exc, NotFound) else 400
        if not isinstance(exc, PathRefused | NotFound | InvalidParams):
            code = 503
        return await view(request, "error", name, pages.error(str(exc)), code)

    async def search(request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        try:
            answer = await backend.ask("memory_search", query=query) if query else None
        except MemdError as exc:
            return await failed(request, "search", exc)
        return await view(request, query or "search", "search", pages.search(query, answer))

    async def timeline(request: Request) -> Response:
        before = request.query_params.get("before") or None
        day = request.query_params.get("day") or None  # that day alone, all of it
        days, more = await backend.read(reading.timeline, before, 14, day)
        return await view(request, "timeline", "timeline", pages.timeline(days, more), live=True)

    async def note(request: Request) -> Response:
        path = request.query_params.get("path", "")
        cited = _lines(request.query_params)
        try:
            answer = await backend.ask("memory_get", path=path, lines=MAX_NOTE_LINES)
            if cited and answer.get("next_from") and cited[0] >= answer["next_from"]:
                # A long note (memory_get gives at most 1,000 lines or 64 KiB): from near
                # the cited lines instead of from its top.
                start = max(cited[0] - _BEFORE_CITED, 1)
                answer = await backend.ask("memory_get", path=path, lines=MAX_NOTE_LINES,
                                           **{"from": start})  # fmt: skip
            replaced, replacing = await backend.read(reading.relations, answer["path"])
            names = (
                note_names(await backend.read(reading.paths)) if "[[" in answer["text"] else None
            )
        except MemdError as exc:
            return await failed(request, "timeline", exc)
        shown = note_html(answer["text"], cited, answer["path"], answer["from"], names)
        body = pages.note(answer, shown, replaced, replacing)
        return await view(request, path, "timeline", body, live=True)

    async def current(request: Request) -> Response:
        week_only = not request.query_params.get("all")
        found = await backend.read(reading.updates, week_only)
        return await view(request, "what is current", "current", pages.current(found, week_only),
                          live=True)  # fmt: skip

    async def review(request: Request, result: str = "") -> Response:
        report = await backend.read(lambda memory: memory.reviewer.latest())
        return await view(request, "review", "review", pages.review(report, guard.csrf, result))

    async def review_post(request: Request) -> Response:
        form = await request.form()
        if not guard.csrf_ok(form.get("csrf")):
            return html(pages.error("refused: this form is not from this page"), 403)
        verb = request.path_params["verb"]
        if verb not in ("apply", "dismiss", "run"):
            return html(pages.error("no such action"), 404)
        try:
            if verb == "run":
                await backend.ask("memory_review")
                return RedirectResponse("/review", 303, headers=_HEADERS)
            pid = str(form.get("id", ""))
            key = "ids" if verb == "apply" else "dismiss"
            answer = await backend.ask("memory_review_apply", **{key: [pid]})
        except MemdError as exc:
            return await failed(request, "review", exc)
        log.info("ui_review", action=verb, id=pid)
        return await review(request, pages.review_result(answer))

    async def status(request: Request) -> Response:
        try:
            s = await backend.sample()
        except MemdError as exc:
            return await failed(request, "status", exc)
        return await view(request, "status", "status", pages.status(s, backend.samples), live=True)

    async def stamp(request: Request) -> Response:
        """What changes when the index does: the script compares it with the last one."""
        try:
            s = await backend.sample()
        except MemdError as exc:
            return JSONResponse({"error": str(exc)}, 503, headers=_HEADERS)
        keys = ("generation", "last_indexed_at", "files", "chunks", "embedded_chunks",
                "pending_files", "pending_embeddings", "watcher")  # fmt: skip
        return JSONResponse({"stamp": "|".join(str(s.get(k)) for k in keys)}, headers=_HEADERS)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return html(pages.error("no such file"), 404)
        # Kept by the browser for the page's life: a view's first paint waits for no fetch.
        kept = {**_HEADERS, "cache-control": "private, max-age=3600"}
        return Response(_asset(name), media_type=_STATIC[name], headers=kept)

    routes = [
        Route("/", timeline),
        Route("/timeline", timeline),
        Route("/search", search),
        Route("/note", note),
        Route("/current", current),
        Route("/review", review),
        Route("/review/{verb:str}", review_post, methods=["POST"]),
        Route("/status", status),
        Route("/api/stamp", stamp),
        Route("/static/{name:str}", static),
    ]

    async def missing(request: Request, exc: Exception) -> Response:
        return await view(request, "not found", "timeline", pages.error("no such page"), 404)

    app = Starlette(routes=routes, exception_handlers={404: missing, 405: missing})
    return _Guarded(app, guard)  # type: ignore[return-value]


def _lines(q: Mapping[str, str]) -> tuple[int, int] | None:
    """The cited lines of a note's address (``from`` and ``to``), if it names them."""
    first, last = q.get("from", ""), q.get("to", q.get("from", ""))
    if not (first.isdigit() and last.isdigit()) or len(first) > 9 or len(last) > 9:
        return None
    return int(first), max(int(first), int(last))


@functools.cache
def _asset(name: str) -> bytes:
    return files("memd.ui").joinpath("static", name).read_bytes()


class _Guarded:
    """The app behind ``Guard``'s checks, as plain ASGI (before any route runs)."""

    def __init__(self, app: Starlette, guard: Guard) -> None:
        self.app, self.guard = app, guard

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        from starlette.requests import Request
        from starlette.responses import HTMLResponse, RedirectResponse

        request = Request(scope)
        guard = self.guard
        refused = None
        if not guard.host_ok(request.headers.get("host")):
            refused = "this page answers only at its own address on 127.0.0.1"
        elif "t" in request.query_params:
            if not guard.use_token(request.query_params["t"]):
                refused = "that token is not this page's: open the address memd printed"
            else:  # the token becomes the cookie, and leaves the address
                rest = [(k, v) for k, v in request.query_params.multi_items() if k != "t"]
                where = request.url.path + (f"?{urlencode(rest)}" if rest else "")
                response = RedirectResponse(where, 303, headers=_HEADERS)
                response.headers.append("set-cookie", guard.cookie_header())
                return await response(scope, receive, send)
        elif not guard.session_ok(request.cookies):
            refused = "open the address memd printed (with its ?t= token) to use this page"
        elif request.method not in ("GET", "HEAD") and (
            request.method != "POST" or not guard.same_origin(request.headers)
        ):
            refused = "refused: a change must come from this page"
        if refused is not None:
            log.info("ui_refused", path=request.url.path, reason=refused)
            body = pages.error(refused)
            return await HTMLResponse(body, 403, headers=_HEADERS)(scope, receive, send)
        return await self.app(scope, receive, send)
