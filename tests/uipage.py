"""A workspace made for the page's tests, and a small HTTP client of the page that keeps
its cookie (http.client: no redirect or cookie handled behind the test's back)."""

from __future__ import annotations

import http.client
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

CORE = (
    "# Memory\n\n## Team\n- **Tom Schreiber**: platform lead\n- Releases go out on Tuesdays.\n"
    "- The deploy target is staging.\n"
)
DAILY = {
    "memory/2026-03-03.md": "# 2026-03-03\n\n## Ops\n- Lunch with Ana at the noodle bar.\n"
    "- Decision: we keep application logs for 30 days.\n",
    "memory/2026-03-09.md": "# 2026-03-09\n\n## Ops\n- Deploy target is production now.\n"
    "- Ran 5 km before work.\n- Decision: we keep application logs for 30 days.\n",
    # A note that tries to run script in the page, three ways.
    "memory/2026-03-10.md": "# 2026-03-10\n\n## Pasted\n"
    "- A snippet: <script>window.__memd_pwned = 1</script>\n"
    '- An image: <img src="x" onerror="window.__memd_pwned = 2">\n'
    "- A link: [click me](javascript:window.__memd_pwned=3)\n"
    "- A spaced one: [me too](java\tscript:window.__memd_pwned=4)\n",
}
SECRET = "the-outside-file-secret-8c1f"
MARKUP_NAME = "<img src=x onerror=window.__memd_pwned=5>.md"  # a note's name that is markup


def make_workspace(ws, outside: Path) -> None:
    """The notes; in memory/, a symlink to a note outside the workspace (indexed: memd
    follows links it is given) and one into /proc (never followed, so never shown)."""
    ws.write("MEMORY.md", CORE)
    for rel, text in DAILY.items():
        ws.write(rel, text)
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "elsewhere.md").write_text(f"# Elsewhere\n\n{SECRET}\n", encoding="utf-8")
    (ws.root / "memory" / "linked.md").symlink_to(outside / "elsewhere.md")
    (ws.root / "memory" / "environ.md").symlink_to("/proc/self/environ")


def wait_indexed(daemon, timeout: float = 30.0) -> None:
    """Until the first pass, the updates among the notes and the first review are done."""

    def replaced() -> bool:
        found = daemon.call("memory_search", query="deploy target production", min_score=0)
        return any(r.get("superseded_by") for r in found["results"])

    daemon.wait_for(lambda: daemon.call("status")["files"] >= 4, timeout, "the first index pass")
    daemon.wait_for(replaced, timeout, "the update found")
    daemon.wait_for(lambda: (daemon.call("status").get("review") or {}).get("waiting"), timeout,
                    "the first review")  # fmt: skip


def ui_config(port: int = 0) -> str:
    return f"ui: {{enabled: true, port: {port}}}\n"


def wait_url(state: Path, daemon=None, timeout: float = 30.0) -> str:
    """The address the daemon's page wrote once it listens."""
    path = state / "ui-default.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            try:
                return json.loads(path.read_text())["url"]
            except (ValueError, KeyError):
                pass
        time.sleep(0.05)
    raise AssertionError(f"no page address in {path}" + (f":\n{daemon.log()}" if daemon else ""))


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: str

    def everything(self) -> str:
        return json.dumps(self.headers) + self.body


@dataclass
class Page:
    """Requests to the page at ``url`` (its token included); ``cookie`` once logged in."""

    url: str
    cookie: str | None = None
    answers: list[Answer] = field(default_factory=list)

    @property
    def port(self) -> int:
        return urlsplit(self.url).port or 0

    @property
    def token(self) -> str:
        return urlsplit(self.url).query.split("t=", 1)[1]

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def request(self, method: str, path: str, body: str | None = None,
                headers: dict | None = None, cookie: bool = True) -> Answer:  # fmt: skip
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        sent = dict(headers or {})
        if cookie and self.cookie:
            sent.setdefault("Cookie", self.cookie)
        if body is not None:
            sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
        conn.request(method, path, body=body, headers=sent)
        r = conn.getresponse()
        got = r.read().decode("utf-8", "replace")
        answer = Answer(r.status, {k.lower(): v for k, v in r.getheaders()}, got)
        conn.close()
        self.answers.append(answer)
        return answer

    def login(self) -> Answer:
        first = self.request("GET", "/?t=" + self.token, cookie=False)
        assert first.status == 303, first
        self.cookie = first.headers["set-cookie"].split(";", 1)[0]
        return first

    def get(self, path: str, **kw) -> Answer:
        return self.request("GET", path, **kw)

    def post(self, path: str, form: str, **kw) -> Answer:
        return self.request("POST", path, body=form, **kw)

    def csrf(self) -> str:
        body = self.get("/review").body
        return body.split('name="csrf" value="', 1)[1].split('"', 1)[0]
