"""The page in a real browser: headless Chromium from the distribution's packages, driven
by the system's chromedriver, against a real daemon on a workspace made for the test.

Nothing is downloaded: the browser and the driver are given by path (``.ci/run`` installs
them). Without them the tests skip and say why, except in CI, where they must run.
Screenshots of each view go to ``$MEMD_UI_SHOTS`` when set (docs/images/ui for the docs).
"""

from __future__ import annotations

import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

from tests.uipage import (
    MARKUP_NAME,
    Page,
    make_workspace,
    ui_config,
    wait_indexed,
    wait_url,
)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
WAIT = 30.0


@pytest.fixture
def browser(tmp_path):
    if CHROMIUM is None or DRIVER is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser tests: .ci/run installs chromium and its driver")
        pytest.skip("no chromium and chromedriver installed (apt-get install chromium "
                    "chromium-driver)")  # fmt: skip
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager never fetches a browser or driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1200,900", "--no-first-run", "--disable-extensions",
                f"--user-data-dir={tmp_path / 'profile'}"):  # fmt: skip
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    driver.set_page_load_timeout(WAIT)
    yield driver
    driver.quit()


def _shot(driver, name: str) -> None:
    folder = os.environ.get("MEMD_UI_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(folder) / f"{name}.png"))


def _wait(driver, condition, what: str):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT, 0.1).until(lambda d: condition(d), message=what)


@pytest.fixture
def site(ws, serve, tmp_path):
    make_workspace(ws, tmp_path / "outside")
    daemon = serve(ui_config())
    wait_indexed(daemon)
    return daemon, Page(wait_url(tmp_path / "state", daemon))


def test_every_view_in_a_browser(browser, site, ws):
    """Search shows strong and weak apart and a replaced fact as replaced; a citation opens
    the note at its lines; Apply writes the line to MEMORY.md once; an edit appears in the
    timeline without a reload; a note's script never runs."""
    from selenium.webdriver.common.by import By

    daemon, page = site
    base = page.origin
    browser.get(page.url)
    assert browser.current_url == base + "/", "the token leaves the address"
    assert "2026-03-09" in browser.find_element(By.ID, "main").text

    browser.get(base + "/search?q=deploy+target+production")
    strong = browser.find_elements(By.CSS_SELECTOR, "section.strong article.hit")
    weak = browser.find_elements(By.CSS_SELECTOR, "section.weak article.hit")
    assert strong and weak
    replaced = browser.find_element(By.CSS_SELECTOR, "p.replaced")
    assert replaced.text.startswith("replaced by memory/2026-03-09.md#L4")
    _shot(browser, "search")
    replaced.find_element(By.TAG_NAME, "a").click()
    _wait(browser, lambda d: "/note?path=memory/2026-03-09.md" in d.current_url, "the note")
    cited = browser.find_element(By.CSS_SELECTOR, ".note .cited")
    assert "Deploy target is production now." in cited.text
    assert browser.find_element(By.CSS_SELECTOR, ".note h1").get_attribute("data-line") == "1"
    _shot(browser, "note")

    browser.get(base + "/current?all=1")
    update = browser.find_element(By.CSS_SELECTOR, "ol.updates li")
    assert "The deploy target is staging." in update.text and "production now" in update.text
    _shot(browser, "current")

    before = (ws.root / "MEMORY.md").read_text()
    browser.get(base + "/review")
    proposal = next(p for p in browser.find_elements(By.CSS_SELECTOR, "article.proposal")
                    if "application logs" in p.text)  # fmt: skip
    _shot(browser, "review")
    proposal.find_element(By.CSS_SELECTOR, "button.apply").click()
    result = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "ul.result"), "a result")
    assert "applied" in result[0].text
    after = (ws.root / "MEMORY.md").read_text()
    assert after.startswith(before)
    assert after.count("we keep application logs for 30 days") == 1

    browser.get(base + "/status")
    assert "daemon running" in browser.page_source
    assert browser.find_element(By.CSS_SELECTOR, "table.status").text

    # A note's script: shown as text, never run.
    browser.get(base + "/note?path=memory/2026-03-10.md")
    main = browser.find_element(By.ID, "main").text
    assert "<script>window.__memd_pwned = 1</script>" in main
    assert browser.execute_script("return window.__memd_pwned") is None
    assert not browser.find_elements(By.CSS_SELECTOR, "#main a[href^='javascript']")
    assert not browser.find_elements(By.CSS_SELECTOR, "#main img, #main script")
    # Offline: the page fetched nothing but its own style and script.
    fetched = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    assert fetched and all(url.startswith(base + "/") for url in fetched), fetched

    # An edit appears in the timeline without a reload.
    browser.get(base + "/timeline")
    browser.execute_script("window.__memd_same_page = 42")
    today = daemon.call("status")["last_indexed_at"][:10]
    ws.write(f"memory/{today}.md", f"# {today}\n\n- Watched the page follow an edit.\n")
    _wait(browser, lambda d: f"memory/{today}.md" in d.find_element(By.ID, "main").text,
          "the new note in the timeline")  # fmt: skip
    assert browser.execute_script("return window.__memd_same_page") == 42, "no reload"
    # A note named in markup arrives in the live timeline as its name, in text.
    ws.write(f"memory/{MARKUP_NAME}", "# A name\n\n- Named in markup.\n")
    _wait(browser, lambda d: MARKUP_NAME in d.find_element(By.ID, "main").text, "the named note")
    assert not browser.find_elements(By.CSS_SELECTOR, "#main img")
    assert browser.execute_script("return window.__memd_pwned") is None
    # So does a flush, with its entry under its day.
    entry = {"text": "Walked through memory in the page.", "title": "page tour"}
    daemon.call("memory_flush", entries=[entry], date="2026-03-10")
    _wait(browser, lambda d: "page tour" in d.find_element(By.ID, "main").text, "the flush")
    assert browser.execute_script("return window.__memd_same_page") == 42, "no reload"
    _shot(browser, "timeline")


class _Attacker(http.server.BaseHTTPRequestHandler):
    """Another page on this machine (another port: the same site, so SameSite is no help)
    that posts to memd's page as soon as it is opened, with a real proposal's id and the
    page's own CSRF token (as if it had leaked): only the origin check stands in its way."""

    target = ""
    form = ""

    def do_GET(self) -> None:
        form = (f'<form id=f method=post action="{self.target}/review/apply">{self.form}</form>'
                "<script>document.getElementById('f').submit()</script>")  # fmt: skip
        body = form.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_another_page_cannot_post_and_no_token_shows_nothing(browser, site, ws):
    """A page of another origin that posts a form to memd's page is refused though the
    browser sends the cookie and the form carries the page's CSRF token; without the token
    the page shows nothing; a ``../`` path or an absolute one shows nothing of the file."""
    from selenium.webdriver.common.by import By

    daemon, page = site
    browser.get(page.origin + "/")
    assert "open the address memd printed" in browser.find_element(By.TAG_NAME, "body").text
    assert "Deploy" not in browser.page_source
    browser.get(page.url)  # logged in: the cookie is set
    for path in ("../memd.yaml", "memory/../../memd.yaml", str(daemon.config_path)):
        browser.get(f"{page.origin}/note?path={path}")
        shown = browser.find_element(By.ID, "main").text
        assert "may not contain" in shown or "absolute" in shown, shown
        assert "state_dir" not in browser.page_source
    before = (ws.root / "MEMORY.md").read_bytes()
    browser.get(page.origin + "/review")
    fields = browser.find_elements(By.CSS_SELECTOR, "form[action='/review/apply'] input")
    _Attacker.form = "".join(
        f'<input name={f.get_attribute("name")} value="{f.get_attribute("value")}">'
        for f in fields[:2]
    )
    assert "name=csrf" in _Attacker.form and "name=id" in _Attacker.form
    _Attacker.target = page.origin
    evil = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    try:
        browser.get(f"http://127.0.0.1:{evil.server_address[1]}/")
        _wait(browser, lambda d: d.current_url.startswith(page.origin), "the form's post")
        body = browser.find_element(By.TAG_NAME, "body").text
        assert "a change must come from this page" in body
    finally:
        evil.shutdown()
    assert (ws.root / "MEMORY.md").read_bytes() == before
    assert daemon.call("status")["files"] >= 4


def test_status_charts_the_embedding_while_it_runs(browser, ws, serve, tmp_path, embed_server):
    """While chunks wait for vectors, the status view shows the rate, the time left and a
    chart of the progress, and follows it without a reload."""
    from selenium.webdriver.common.by import By

    ws.write("MEMORY.md", "# Memory\n\n- The page charts the embedding.\n")
    for n in range(160):
        ws.write(f"memory/topics/topic-{n:03}.md", f"# Topic {n}\n\nNotes on subject {n}.\n")
    embed_server.delay = 0.3  # each request: the back-fill takes a while
    embeddings = (
        f"embeddings: {{provider: openai, model: concepts-1, base_url: {embed_server.url}, "
        "batch_size: 4, debounce_ms: 0, interim: false}\n"
    )
    daemon = serve(ui_config() + embeddings)
    page = Page(wait_url(tmp_path / "state", daemon))
    browser.get(page.url)
    browser.get(page.origin + "/status")
    browser.execute_script("window.__memd_same_page = 7")

    def charted(d):
        text = d.find_element(By.ID, "main").text
        line = d.find_elements(By.CSS_SELECTOR, "svg.chart polyline.done")
        return "chunks/s" in text and " left" in text and line and line[0].get_attribute("points")

    _wait(browser, charted, "the rate, the time left and the chart")
    assert browser.execute_script("return window.__memd_same_page") == 7, "no reload"
    _shot(browser, "status")


def test_two_pages_open_side_by_side_in_one_browser(browser, site, tmp_path):
    """The daemon's page and another workspace's page (``memd ui`` on another port) stay
    open in one browser: logging in to one never logs the other out (a cookie is the
    host's, whatever its port)."""
    import subprocess
    import sys

    from selenium.webdriver.common.by import By

    daemon, page = site
    other = tmp_path / "other"
    (other / "ws").mkdir(parents=True)
    (other / "ws" / "MEMORY.md").write_text("# Memory\n\n- The other workspace.\n")
    config = other / "memd.yaml"
    config.write_text(
        f"workspace: {other / 'ws'}\nstate_dir: {other / 'state'}\n"
        f"socket: {other / 'memd.sock'}\nembeddings: {{provider: none}}\n"
    )
    proc = subprocess.Popen([sys.executable, "-m", "memd", "--config", str(config), "ui"],
                            env=daemon.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        second = Page(proc.stdout.readline().strip())
        browser.get(page.url)
        browser.get(second.url)
        for origin, banner in (
            (page.origin, "daemon running"),
            (second.origin, "daemon is stopped"),
        ):
            browser.get(origin + "/status")
            assert banner in browser.find_element(By.TAG_NAME, "body").text, origin
    finally:
        proc.terminate()
        proc.wait(10)
