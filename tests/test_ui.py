"""The local page (memd ui): who may use it, what it refuses, and what it shows, over HTTP
against a real daemon serving it (tests/test_ui_browser.py drives it in Chromium)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from memd.configfile import parse_config
from memd.errors import ConfigError
from memd.ui.notehtml import note_html, note_names, note_url
from memd.ui.reading import PER_DAY
from tests.uipage import (
    MARKUP_NAME,
    SECRET,
    Page,
    make_workspace,
    ui_config,
    wait_indexed,
    wait_url,
)


@pytest.fixture
def page(ws, serve, tmp_path) -> Page:
    make_workspace(ws, tmp_path / "outside")
    daemon = serve(ui_config())
    wait_indexed(daemon)
    p = Page(wait_url(tmp_path / "state", daemon))
    p.daemon = daemon  # type: ignore[attr-defined]
    p.state = tmp_path / "state"  # type: ignore[attr-defined]
    return p


def test_nothing_answers_without_the_token_and_the_token_becomes_a_cookie(page):
    """Without the token or its cookie every view is refused; the token swaps for a cookie
    and leaves the address."""
    for path in ("/", "/search?q=deploy", "/note?path=MEMORY.md", "/status", "/api/stamp",
                 "/static/ui.js"):  # fmt: skip
        refused = page.get(path)
        assert refused.status == 403, path
        assert "Deploy" not in refused.body and "set-cookie" not in refused.headers
    wrong = page.get("/?t=" + "x" * len(page.token))
    assert wrong.status == 403 and "set-cookie" not in wrong.headers
    assert page.get("/?t=").status == 403
    first = page.login()
    assert first.headers["location"] == "/"  # the token is gone from the address
    cookie = first.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and page.token not in cookie
    assert page.get("/").status == 200
    assert page.get("/", headers={"Cookie": f"memd_ui_{page.port}=guessed"}).status == 403
    assert cookie.startswith(f"memd_ui_{page.port}=")  # two pages' cookies never collide
    # The token is used up: the address printed opens the page once.
    assert page.get(f"/?t={page.token}", cookie=False).status == 403
    # The next address (the daemon keeps it for memd ui) works once, and a bookmark's
    # address keeps the rest of it.
    fresh = Page(wait_url(page.state)).token
    assert fresh != page.token
    kept = page.get(f"/search?q=deploy&t={fresh}", cookie=False)
    assert kept.status == 303 and kept.headers["location"] == "/search?q=deploy"
    assert page.get(f"/?t={fresh}", cookie=False).status == 403


def test_another_host_name_is_refused(page):
    """A site that points its own name at 127.0.0.1 (DNS rebinding) gets nothing, even
    with the cookie."""
    page.login()
    for host in (f"evil.example:{page.port}", "127.0.0.1", "127.0.0.1:1", f"0.0.0.0:{page.port}"):
        assert page.get("/", headers={"Host": host}).status == 403, host
    assert page.get("/", headers={"Host": f"localhost:{page.port}"}).status == 200


def test_the_page_listens_on_127_0_0_1_only(page):
    """The kernel's table of listening sockets has the page's port on 127.0.0.1 alone."""
    tables = [Path(f"/proc/net/{t}") for t in ("tcp", "tcp6")]
    if not tables[0].exists():
        pytest.skip("no /proc/net/tcp to read the listening sockets from")
    listening = set()
    for table in tables:
        for line in table.read_text().splitlines()[1:] if table.exists() else []:
            local, state = line.split()[1], line.split()[3]
            address, port = local.rsplit(":", 1)
            if state == "0A" and int(port, 16) == page.port:  # 0A: LISTEN
                listening.add(address)
    assert listening == {"0100007F"}  # 127.0.0.1, as the kernel writes it


def _proposal_id(page: Page) -> str:
    body = page.get("/review").body
    # The promotion (the conflict beside it ranks first: 0.9 against 0.85).
    found = re.search(
        r'<article class="proposal" id="p-([^"]+)"><p><span class="kind">promote', body
    )
    assert found, body
    return found.group(1)


def test_a_change_needs_this_pages_origin_and_csrf_token(page, ws):
    """Apply is refused from a foreign Origin, with no Origin or Referer, with no CSRF
    token or a wrong one; MEMORY.md is untouched until the page's own form applies it,
    once."""
    page.login()
    pid = _proposal_id(page)
    csrf = page.csrf()
    before = (ws.root / "MEMORY.md").read_bytes()
    form = f"id={pid}&csrf={csrf}"
    attempts = [
        ({"Origin": "http://evil.example"}, form),
        ({"Origin": "null"}, form),
        ({"Origin": f"http://127.0.0.1:{page.port + 1}"}, form),
        ({}, form),  # neither Origin nor Referer
        ({"Referer": "http://evil.example/x"}, form),
        ({"Origin": page.origin}, f"id={pid}"),
        ({"Origin": page.origin}, f"id={pid}&csrf=wrong"),
        ({"Origin": page.origin}, f"id={pid}&csrf={csrf[:-1]}"),
    ]
    for headers, body in attempts:
        answer = page.post("/review/apply", body, headers=headers)
        assert answer.status == 403, (headers, body)
    assert (
        page.post("/review/apply", form, headers={"Origin": page.origin}, cookie=False).status
        == 403
    )
    assert page.request("PUT", "/review/apply", form, headers={"Origin": page.origin}).status == 403
    assert page.post("/review/other", form, headers={"Origin": page.origin}).status == 404
    assert (ws.root / "MEMORY.md").read_bytes() == before
    done = page.post("/review/apply", form, headers={"Origin": page.origin})
    assert done.status == 200 and f"applied {pid}" in done.body
    again = page.post("/review/apply", form, headers={"Referer": page.origin + "/review"})
    assert again.status == 200 and "already applied" in again.body
    text = (ws.root / "MEMORY.md").read_text()
    assert text.count("we keep application logs for 30 days") == 1
    assert text.startswith(before.decode())  # appended: nothing a person wrote changed
    # Dismiss hides a proposal for good, as `memd review --dismiss` does, and writes nothing.
    other = next(i for i in re.findall(r'id="p-([^"]+)"', page.get("/review").body) if i != pid)
    gone = page.post("/review/dismiss", f"id={other}&csrf={csrf}", headers={"Origin": page.origin})
    assert gone.status == 200 and f"dismissed {other}" in gone.body
    assert f'id="p-{other}"' not in gone.body and f'id="p-{other}"' not in page.get("/review").body
    assert other not in [p["id"] for p in page.daemon.call("memory_review")["proposals"]]
    assert (ws.root / "MEMORY.md").read_text() == text


def test_paths_outside_the_workspace_are_refused(page, tmp_path):
    """``../``, absolute paths and a symlink memd did not follow show nothing of the file;
    a symlinked note memd indexed is shown, as ``memd get`` shows it."""
    page.login()
    outside = tmp_path / "outside" / "elsewhere.md"
    for path in ("../outside/elsewhere.md", "memory/../../outside/elsewhere.md", str(outside),
                 "/etc/passwd", "~/x.md", "memory/environ.md", "/proc/self/environ",
                 "memory%2F..%2F..%2Fmemd.yaml", "memory\\..\\MEMORY.md", "memd.yaml",
                 "../memd.yaml", ""):  # fmt: skip
        answer = page.get("/note?path=" + quote(path, safe="%"))
        assert answer.status in (400, 403, 404), (path, answer.status)
        assert SECRET not in answer.body and "root:" not in answer.body
        assert "HOME=" not in answer.body and "state_dir" not in answer.body
    assert page.get("/note?path=MEMORY.md").status == 200
    linked = page.get("/note?path=memory/linked.md")
    assert linked.status == 200 and SECRET in linked.body
    assert page.daemon.call("memory_get", path="memory/linked.md")["text"].count(SECRET) == 1


def test_a_notes_markup_never_becomes_the_pages(page, ws):
    """A note's <script>, onerror= and javascript: links arrive as text; so does a note's
    name written in markup, in the timeline and on its own page."""
    page.login()
    ws.write(f"memory/{MARKUP_NAME}", "# A name\n\n- Named in markup.\n")
    escaped = "&lt;img src=x onerror=window.__memd_pwned=5&gt;"
    page.daemon.wait_for(lambda: escaped in page.get("/").body, 30, "the note in the timeline")
    for view in ("/", "/note?path=" + quote(f"memory/{MARKUP_NAME}")):
        shown = page.get(view).body.split('<main id="main"', 1)[1]
        assert escaped in shown and "<img" not in shown.lower(), view
    body = page.get("/note?path=memory/2026-03-10.md").body
    main = body.split('<main id="main"', 1)[1]
    assert "<script" not in main.lower() and "&lt;script&gt;" in main
    assert "<img" not in main.lower() and "onerror=&quot;" in main
    assert not re.search(r'href="\s*java', main, re.I)
    found = page.get("/search?q=window+pwned+snippet").body.split('<main id="main"', 1)[1]
    assert "<script" not in found.lower() and "&lt;script&gt;" in found
    assert re.findall(r"<script[^>]*>", body) == ['<script src="/static/ui.js" defer>']
    csp = page.get("/").headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp


def test_the_token_is_in_no_answer_and_every_view_answers(page):
    """Across every view, a refusal and a form post, neither the token nor the cookie's
    value is in any answer's body (and the token in no header)."""
    page.get("/")
    page.get("/?t=nope")
    page.login()
    for path in ("/", "/timeline", "/search?q=deploy+target", "/note?path=MEMORY.md",
                 "/current", "/current?all=1", "/review", "/status", "/api/stamp",
                 "/static/ui.css", "/note?path=../x.md", "/nothing"):  # fmt: skip
        page.get(path)
    page.post("/review/dismiss", "id=nope&csrf=bad", headers={"Origin": page.origin})
    session = page.cookie.split("=", 1)[1]
    unused = Page(wait_url(page.state)).token
    for n, answer in enumerate(page.answers):
        assert unused not in answer.everything(), n
        assert page.token not in answer.everything() or (answer.status == 303 and \
            page.token not in answer.body), n  # fmt: skip
        assert page.token not in json.dumps(answer.headers)
        assert session not in answer.body, n


def test_views_show_what_the_library_answers(page, ws):
    """Search splits strong from weak, a replaced fact names what replaced it, the note
    shows line numbers and its relations, the updates list old and new."""
    page.login()
    found = page.get("/search?q=deploy+target").body
    assert '<section class="strong">' in found
    assert "replaced by" in found and note_url("memory/2026-03-09.md#L4-L4") in found.replace(
        "&amp;", "&"
    )
    note = page.get("/note?path=MEMORY.md").body
    assert 'data-line="1"' in note and "Replaced since" in note
    updates = page.get("/current?all=1").body
    assert (
        "The deploy target is staging." in updates and "Deploy target is production now." in updates
    )
    status = page.get("/status").body
    assert "<th>files</th>" in status and "daemon running" in status
    ws.write("memory/links.md", "# Links\n\n- The core: [[MEMORY]].\n")
    link = '<a href="/note?path=MEMORY.md" class="wikilink"'
    page.daemon.wait_for(lambda: link in page.get("/note?path=memory/links.md").body, 30,
                         "the new note, its wikilink a link")  # fmt: skip
    flushed = page.daemon.call("memory_flush", entries=[{"text": "Tried the page.", "title": "ui"}])
    where = flushed["written"][0]
    timeline = page.get("/timeline").body
    assert f"{where['path']}#L{where['start_line']}" in timeline and "— ui" not in timeline
    assert re.search(r'class="flush">flush \d\d:\d\d ui <a', timeline), timeline


def test_memd_ui_with_the_daemon_stopped_reads_the_index_and_says_so(ws, tmp_path):
    """``memd ui`` without a daemon prints its address and serves the index as it is."""
    make_workspace(ws, tmp_path / "outside")
    config = tmp_path / "memd.yaml"
    sock = tmp_path / "memd.sock"
    config.write_text(f"workspace: {ws.root}\nstate_dir: {tmp_path / 'state'}\n"
                      f"socket: {sock}\nembeddings: {{provider: none}}\n")  # fmt: skip
    env = {**os.environ, "HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-m", "memd", "--config", str(config), "index"], env=env,
                   check=True, capture_output=True)  # fmt: skip
    command = [sys.executable, "-m", "memd", "--config", str(config), "ui"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and "?t=" in url, proc.stderr.read()
        p = Page(url)
        p.login()
        body = p.get("/").body
        assert "the daemon is stopped" in body and "memory/2026-03-09.md" in body
        assert "Deploy target is production" in p.get("/search?q=deploy+target").body
        assert p.get("/note?path=../memd.yaml").status == 403
    finally:
        proc.terminate()
        proc.wait(10)


def test_memd_ui_prints_the_address_of_the_daemons_page(page, tmp_path):
    """With a daemon serving the page, ``memd ui`` prints that page's address and ends."""
    daemon = page.daemon
    out = subprocess.run([sys.executable, "-m", "memd", "--config", str(daemon.config_path), "ui"],
                         env=daemon.env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == page.url
    assert "served by the daemon" in out.stderr
    page.login()  # that address is used up: the next memd ui prints another, that works
    again = subprocess.run(
        [sys.executable, "-m", "memd", "--config", str(daemon.config_path), "ui"],
        env=daemon.env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    second = Page(again.stdout.strip())
    assert second.url != page.url and second.login().status == 303


def test_memd_ui_without_starlette_names_the_extra(tmp_path):
    """Without the web packages the command says which extra brings them."""
    code = ("import sys; sys.modules['uvicorn'] = None\n"
            "from memd.cli.main import main; sys.exit(main(['ui']))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "HOME": str(tmp_path)}, timeout=60)  # fmt: skip
    assert out.returncode == 1
    assert "uvicorn is missing" in out.stderr and "[mcp]" in out.stderr


@pytest.mark.parametrize(
    ("markdown", "forbidden"),
    [
        ("<script>alert(1)</script>", "<script"),
        ('<img src=x onerror="alert(1)">', "<img"),
        ("[a](javascript:alert(1))", 'href="javascript'),
        ("[a](JAVASCRIPT:alert(1))", 'href="javascript'),
        ("[a](  javascript:alert(1))", "href="),
        ("[a](vbscript:x)", "href="),
        ("[a](data:text/html;base64,PHNjcmlwdD4=)", "href="),
        ("![a](data:image/svg+xml,<svg onload=alert(1)>)", "<svg"),
        ("![a](http://example.com/x.png)", "<img"),
        ('<a href="javascript:x">a</a>', "<a href"),
        ("<iframe src=//evil></iframe>", "<iframe"),
        ("[a](<javascript:x>)", 'href="javascript'),
    ],
)
def test_a_note_renders_without_markup_that_runs(markdown, forbidden):
    """Raw HTML is text; links only to the web, mail and notes; images fetch nothing."""
    out = note_html(f"# t\n\n{markdown}\n")
    assert forbidden not in out.lower()


def test_cited_lines_are_marked_and_numbered():
    out = note_html("# t\n\n- one\n- two\n\nthree\n", (4, 4))
    assert '<h1 data-line="1" id="L1">' in out
    assert 'class="cited"' in out and 'id="cited"' in out
    assert '<p data-line="6" id="L6">three</p>' in out


def test_ui_port_is_checked(tmp_path):
    with pytest.raises(ConfigError, match="ui.*port must be 0 to 65535"):
        parse_config({"ui": {"port": 70000}}, env={"HOME": str(tmp_path)})
    assert parse_config({"ui": {"enabled": True}}, env={"HOME": str(tmp_path)}).ui.enabled


def test_links_between_notes_open_their_pages():
    """A relative link in a note leads to that note's page; where it leads is checked when
    it is opened, as every path is."""
    out = note_html("[a](../MEMORY.md) [b](b%20c.md#x) [c](#top) [d](https://e.org)", None,
                    "memory/2026-01-01.md")  # fmt: skip
    assert 'href="/note?path=MEMORY.md"' in out
    assert 'href="/note?path=memory/b%20c.md"' in out
    assert 'href="#top"' in out and 'href="https://e.org"' in out


def test_wikilinks_open_the_notes_they_name():
    """``[[Note]]``, ``[[Note|shown]]`` and an embed open the note of that name (whatever
    its case and accents), one in the linking note's folder first, else the one nearest
    the top; a name no note has, and a wikilink in code, stay text."""
    names = note_names(
        [
            "MEMORY.md",
            "memory/2026-01-02.md",
            "memory/projects/Atlas.md",
            "archive/old/atlas.md",
            "memory/Königsberg.md",
            "memory/x.pdf",
        ]
    )
    text = ("# t\n\nSee [[atlas]], [[MEMORY|the core]], ![[konigsberg]], [[nope]], [[x.pdf]] "
            "and `[[atlas]]`.\n")  # fmt: skip
    out = note_html(text, None, "memory/projects/today.md", names=names)
    assert '<a href="/note?path=memory/projects/Atlas.md" class="wikilink"' in out
    assert (
        '<a href="/note?path=MEMORY.md" class="wikilink" rel="noreferrer noopener">the core</a>'
        in out
    )
    assert 'href="/note?path=memory/K%C3%B6nigsberg.md"' in out and "!" not in out
    assert "nope, x.pdf and <code>[[atlas]]</code>" in out
    elsewhere = note_html("[[atlas]]", None, "memory/2026-01-02.md", names=names)
    assert 'href="/note?path=archive/old/atlas.md"' in elsewhere  # nearest the top: a tie, by name
    assert "<a" not in note_html("[[atlas]]")  # no names given: text


def test_memd_ui_beside_a_daemon_without_its_page_writes_through_the_daemon(ws, serve, tmp_path):
    """``memd ui`` next to a daemon that serves no page serves one itself, says the daemon
    runs, and Apply goes through the daemon: the line is in MEMORY.md once."""
    make_workspace(ws, tmp_path / "outside")
    daemon = serve()
    wait_indexed(daemon)
    command = [sys.executable, "-m", "memd", "--config", str(daemon.config_path), "ui"]
    proc = subprocess.Popen(command, env=daemon.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        p = Page(proc.stdout.readline().strip())
        p.login()
        assert f"daemon running: pid {daemon.proc.pid}" in p.get("/").body
        missing = p.get("/nothing")
        assert missing.status == 404 and "content-security-policy" in missing.headers
        pid = _proposal_id(p)
        form = f"id={pid}&csrf={p.csrf()}"
        assert p.post("/review/apply", form, headers={"Origin": p.origin}).status == 200
        text = (ws.root / "MEMORY.md").read_text()
        assert text.count("we keep application logs for 30 days") == 1
        assert "memory_review_apply" in daemon.log()  # the daemon wrote it
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_change_to_ui_in_a_running_daemon_shows_as_drift_on_its_page(ws, serve, tmp_path):
    """The page starts and stops with the daemon: turning it off in the config shows, on
    the page itself, as config drift until memd restarts; put back, the drift is gone."""
    ws.write("MEMORY.md", "# Memory\n\n- A note.\n")
    daemon = serve(ui_config())
    p = Page(wait_url(tmp_path / "state", daemon))
    p.login()
    text = daemon.config_path.read_text()
    daemon.config_path.write_text(text.replace(ui_config(), "ui: {enabled: false}\n"))
    drift = re.compile(
        r"<th>config drift</th><td>[^<]*\bui in [^<]* take effect when memd restarts"
    )
    daemon.wait_for(lambda: drift.search(p.get("/status").body), 30, "the drift on the page")
    daemon.config_path.write_text(text)
    none = "<th>config drift</th><td>none: what runs is what the file says</td>"
    daemon.wait_for(lambda: none in p.get("/status").body, 30, "no drift")


def test_updates_found_by_subject_and_value_alone_are_marked_likely():
    from memd.ui.pages import current
    from memd.ui.reading import Update

    shown = current([Update("MEMORY.md#L5-L5", "Logs are kept for 30 days.",
                            "memory/2026-03-05.md#L3-L3", "Log retention: 14 days.", True,
                            "2026-03-05")], week_only=True)  # fmt: skip
    assert 'class="likely"' in shown and "<s>Logs are kept for 30 days.</s>" in shown
    assert "this week" in shown and 'href="/current?all=1"' in shown


def test_a_long_note_opens_at_the_cited_lines(ws, serve, tmp_path):
    """A note longer than one read opens near a citation past its first part, with its
    own line numbers, and says which lines it shows."""
    ws.write("MEMORY.md", "# Memory\n\n- A note.\n")
    ws.write("memory/log.md", "# Log\n\n" + "".join(f"- entry {n}\n" for n in range(3, 1501)))
    daemon = serve(ui_config())
    daemon.wait_for(lambda: daemon.call("status")["files"] >= 2, 30, "the first index pass")
    p = Page(wait_url(tmp_path / "state", daemon))
    p.login()
    top = p.get("/note?path=memory/log.md").body
    assert "lines 1 to 1000 of 1500" in top and "from=1001" in top
    deep = p.get("/note?path=memory/log.md&from=1400&to=1400").body
    assert "lines 1380 to 1500 of 1500" in deep
    assert re.search(r'<li data-line="1400" class="cited" id="cited">entry 1400</li>', deep)


def test_status_shows_the_teams_outbox_last_publish_and_errors(ws, serve, tmp_path, team_dsn):
    """Status says as whom the daemon publishes to the team's database and when it last
    did; once that database refuses connections, the error it waits on and the files an
    edit left unpublished."""
    import psycopg

    ws.write("MEMORY.md", "# Memory\n\n- The gateway returned 502s.\n")
    daemon = serve(ui_config() + f"team: {{dsn: '{team_dsn}', host: laptop-a}}\n")
    p = Page(wait_url(tmp_path / "state", daemon))
    p.login()

    def row(name: str, body: str) -> str:
        found = re.search(f"<th>{name}</th><td>([^<]*)</td>", body)
        return found.group(1) if found else ""

    body = daemon.wait_for(lambda: "idle" in row("team", b := p.get("/status").body) and b,
                           30, "the first publish")  # fmt: skip
    assert row("team", body) == "publishing as laptop-a: idle"
    assert row("team outbox", body) == "0 files not yet published"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d.*", row("team last publish", body))
    name = team_dsn.split("?", 1)[0].rsplit("/", 1)[1]
    with psycopg.connect(team_dsn.replace(f"/{name}?", "/postgres?"), autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                     (name,))  # fmt: skip
    ws.write("MEMORY.md", "# Memory\n\n- The gateway is fixed.\n")
    body = daemon.wait_for(lambda: "team database" in row("team", b := p.get("/status").body)
                           and b, 30, "the team's error")  # fmt: skip
    assert row("team", body).startswith("publishing as laptop-a: waiting")
    assert row("team outbox", body) == "1 file not yet published"


def test_the_embedding_chart_keeps_the_last_hour_and_no_more(ws, memory):
    """However long the page runs, the chart holds the last hour of samples: older ones
    leave, the count stays bounded, and the chart says what it spans."""
    import asyncio

    from memd.serve.methods import call
    from memd.ui.app import SAMPLE_S, Backend
    from memd.ui.pages import status

    ws.write("MEMORY.md", "# Memory\n\n- A note.\n")
    memory.index()
    now = [1_000_000.0]

    async def ask(method: str, params: dict) -> dict:
        return call(lambda name: memory, method, params)

    async def nobody() -> None:
        return None

    backend = Backend(ask, lambda: memory, nobody, clock=lambda: now[0])

    async def run_for(hours: float) -> dict:
        for _ in range(int(hours * 3600 / SAMPLE_S)):
            s = await backend.sample()
            now[0] += SAMPLE_S
        return s

    s = asyncio.run(run_for(0.1))
    assert len(backend.samples) == int(0.1 * 3600 / SAMPLE_S)
    assert "over the last 6 minutes" in status(s, backend.samples)
    s = asyncio.run(run_for(5))
    times = [t for t, _, _ in backend.samples]
    assert len(times) <= 3600 / SAMPLE_S + 1 and now[0] - SAMPLE_S - times[0] <= 3600
    assert times == sorted(times) and times[-1] == now[0] - SAMPLE_S
    assert "over the last 60 minutes" in status(s, backend.samples)


def test_the_timeline_lists_sessions_and_how_many_more_a_day_has(ws, serve, tmp_path):
    """A session transcript is listed under its day, marked as a session, and opens; a
    day with more notes than a day lists (a vault synced today) lists the first and
    links to all of them."""
    ws.write("memory/2026-03-04.md", "# 2026-03-04\n\n- Asked the agent about the backup.\n")
    for n in range(PER_DAY + 7):
        ws.write(f"memory/topics/topic-{n:03}.md", f"# Topic {n}\n\nAbout subject {n}.\n")
    folder = tmp_path / "transcripts"
    folder.mkdir()
    turns = [{"role": "user", "content": "why did the backup fail?", "session": "s1",
              "timestamp": "2026-03-04T09:00:00Z"},
             {"role": "assistant", "content": "The disk was full.", "session": "s1",
              "timestamp": "2026-03-04T09:00:05Z"}]  # fmt: skip
    (folder / "s1.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    sessions = f"sessions: [{{path: {folder}, format: jsonl, name: bot}}]\n"
    daemon = serve(ui_config() + sessions)
    p = Page(wait_url(tmp_path / "state", daemon))
    p.login()
    link = '<li class="session">session <a href="/note?path=sessions/bot/s1.jsonl">'
    body = daemon.wait_for(lambda: link in (b := p.get("/").body) and b, 30, "the session")
    day = body.split('<li class="day"><h2><a href="/note?path=memory/2026-03-04.md">', 1)[1]
    assert day.split('<li class="day">', 1)[0].count(link) == 1  # under its own day
    assert "The disk was full." in p.get("/note?path=sessions/bot/s1.jsonl").body
    count = re.compile(r'<a href="/timeline\?day=([\d-]+)">7 more of this day</a>')
    more = daemon.wait_for(lambda: count.search(p.get("/").body), 30, "the count")
    assert p.get("/").body.count(">memory/topics/topic-") == PER_DAY
    whole = p.get(f"/timeline?day={more.group(1)}").body
    assert whole.count(">memory/topics/topic-") == PER_DAY + 7 and "more of this" not in whole
    assert "2026-03-04" not in whole  # that day alone


def test_a_day_with_many_flushes_lists_the_newest(ws, memory):
    """Past the most a day lists, the timeline keeps a day's newest flushes and counts
    the rest."""
    from memd.ui.reading import timeline

    entries = "".join(
        f"\n## 10:{n:02} — entry {n}\n\nWrote entry {n}.\n" for n in range(PER_DAY + 5)
    )
    ws.write("memory/2026-03-05.md", "# 2026-03-05\n" + entries)
    memory.index()
    (day,), _ = timeline(memory)
    assert [title for _, title in day.flushes] == [f"10:{n:02} entry {n}"
                                                   for n in range(5, PER_DAY + 5)]  # fmt: skip
    assert day.unlisted == 5 and day.daily == ["memory/2026-03-05.md"]
