"""The built site in a real browser: Debian's Chromium driven by Playwright, served on a local port."""
import functools
import http.server
import shutil
import threading
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)")
playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def server(built_site):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(built_site))
    handler.log_message = lambda *a, **k: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


def _open(browser, url):
    page = browser.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    page.goto(url, wait_until="load")
    return page, errors


def _pages(built_site, lang):
    return sorted(p.relative_to(Path(built_site) / lang).as_posix() for p in (Path(built_site) / lang).rglob("index.html"))


@pytest.mark.parametrize("lang", ["zh-tw", "en"])
def test_every_page_loads_and_every_chart_draws(server, browser, built_site, lang):
    for rel in _pages(built_site, lang):
        page, errors = _open(browser, f"{server}/{lang}/{rel}")
        charts = page.locator(".chart")
        for i in range(charts.count()):
            charts.nth(i).locator(".main-svg").first.wait_for(state="attached", timeout=15_000)
        assert page.locator("html").get_attribute("lang") in ("en", "zh-Hant-TW")
        assert errors == [], (rel, errors)
        page.close()


@pytest.mark.parametrize("lang,other", [("zh-tw", "en"), ("en", "zh-tw")])
def test_language_switcher_keeps_the_page(server, browser, built_site, lang, other):
    for rel in _pages(built_site, lang):
        page, _ = _open(browser, f"{server}/{lang}/{rel}")
        page.click("#lang-switch")
        page.wait_for_load_state("load")
        assert page.url == f"{server}/{other}/{rel}"
        page.close()
