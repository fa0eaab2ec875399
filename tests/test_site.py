"""The built book in a real browser: every page of the TOC in headless Chromium, offline.

The site is built once per test session (`tools/build_book.py:build_for_tests`, shared with
tests/test_book.py), served by a local http.server on 127.0.0.1 and opened with Selenium driving
Debian's chromium + chromium-driver, which the test installs with apt-get when they are missing.
For every page: no console error, every request went to 127.0.0.1 and succeeded, math is typeset
(MathJax containers wherever the source has math, no raw `$...$` or `\\frac` left in the text,
no MathJax error), every image loaded (naturalWidth > 0), and every internal link and anchor
resolves on the served site. The search page finds lessons with the local index.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlsplit
from urllib.request import urlopen

import pytest

from tools import build_book

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# No network here but the package registries: without these flags Chromium's background
# services try to reach Google at every start and fill the logs with refused connections.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1280,900")
PAGE_TIMEOUT = 60  # seconds for a page to load and typeset its math


@functools.lru_cache(maxsize=1)
def browser_binaries() -> tuple[str, str]:
    """Paths of chromium and chromedriver, installed with apt-get once if missing; else skip."""
    found = [shutil.which(p) or (p if Path(p).exists() else None) for p in (CHROMIUM, CHROMEDRIVER)]
    if all(found):
        return found[0], found[1]
    if shutil.which("apt-get") is None:
        pytest.skip("chromium/chromedriver are not installed and apt-get is unavailable: the browser "
                    "test cannot run here (install Debian's chromium and chromium-driver)")
    if os.geteuid() != 0:
        pytest.skip("chromium/chromedriver are not installed and installing them needs root: run "
                    "`sudo apt-get install -y chromium chromium-driver`")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = ["apt-get", "install", "-y", "--no-install-recommends", "chromium", "chromium-driver"]
    done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:  # a fresh machine may have no package lists yet
        subprocess.run(["apt-get", "update"], env=env, capture_output=True, text=True, timeout=600)
        done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0 or not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("could not install chromium and chromium-driver with apt-get: "
                    + (done.stderr or done.stdout).strip()[-500:])
    return CHROMIUM, CHROMEDRIVER


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002  (the base class's name)
        pass


@pytest.fixture(scope="module")
def site():
    """The built site, served on 127.0.0.1; yields (build, base_url)."""
    book = build_book.build_for_tests()
    html_dir = book.html_dir
    handler = functools.partial(_QuietHandler, directory=str(html_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield book, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser():
    chromium, chromedriver = browser_binaries()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as error:  # a missing dependency is a failure, not a reason to skip
        raise AssertionError("selenium is missing: pip install -r requirements/browser.txt") from error
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not try to download drivers
    profile = tempfile.mkdtemp(prefix="book-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    try:
        driver = webdriver.Chrome(options=options, service=Service(executable_path=chromedriver))
    except Exception as error:  # noqa: BLE001
        shutil.rmtree(profile, ignore_errors=True)
        pytest.skip(f"headless Chromium could not start here: {str(error).strip()[:500]}")
    driver.set_page_load_timeout(PAGE_TIMEOUT)
    driver.set_script_timeout(PAGE_TIMEOUT)
    driver.get("about:blank")  # leave the start page (chrome:// resources) out of the logs
    driver.get_log("performance")
    driver.get_log("browser")
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def toc_pages() -> list[str]:
    """The docnames of every page in _toc.yml, in order (root first)."""
    import yaml  # a dependency of jupyter-book

    toc = yaml.safe_load((build_book.ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                pages.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return pages


TOC_PAGES = toc_pages()
NETWORK_SCHEMES = ("http", "https", "ws", "wss", "ftp")  # data:, blob:, about: fetch nothing

WAIT_FOR_MATHJAX = """
const done = arguments[arguments.length - 1];
const finish = (state) => done(state);
if (document.readyState !== "complete") {
  window.addEventListener("load", () => setTimeout(check, 0));
} else { check(); }
function check() {
  if (!window.MathJax) { finish("no-mathjax"); return; }
  const started = () => MathJax.startup && MathJax.startup.promise;
  const wait = () => {
    if (!started()) { setTimeout(wait, 50); return; }
    MathJax.startup.promise.then(() => finish("typeset"), (e) => finish("error: " + e));
  };
  wait();
}
"""

PAGE_FACTS = """
const skip = new Set(["PRE", "CODE", "SCRIPT", "STYLE", "TEXTAREA", "MJX-CONTAINER", "NOSCRIPT"]);
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
  acceptNode(node) {
    for (let el = node.parentElement; el; el = el.parentElement) {
      if (skip.has(el.tagName.toUpperCase())) return NodeFilter.FILTER_REJECT;
      if (el.classList && (el.classList.contains("highlight") || el.hidden)) return NodeFilter.FILTER_REJECT;
    }
    return NodeFilter.FILTER_ACCEPT;
  }});
const text = [];
while (walker.nextNode()) text.push(walker.currentNode.nodeValue);
const math = Array.from(document.querySelectorAll(".math"));
return {
  text: text.join(" "),
  math: math.length,
  untypeset: math.filter((el) => !el.querySelector("mjx-container")).map((el) => el.textContent.slice(0, 80)),
  containers: document.querySelectorAll("mjx-container").length,
  merrors: Array.from(document.querySelectorAll("mjx-merror")).map((el) => el.textContent.slice(0, 80)),
  images: Array.from(document.images).map((img) => ({
    src: img.currentSrc || img.src, ok: img.complete && img.naturalWidth > 0})),
  links: Array.from(document.querySelectorAll("a[href]")).map((a) => a.href),
  title: document.title,
};
"""

# TeX that MathJax should have replaced: $...$, \frac and friends, \( and \[ delimiters.
RAW_TEX = re.compile(r"\$[^$\s][^$]*\$"
                     r"|\\(?:frac|begin|end|sum|mathbb|operatorname|left|right|cdot|le|ge|infty)\b"
                     r"|\\\(|\\\[")


def _network_events(driver) -> list[dict]:
    events = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"].startswith("Network."):
            events.append(message)
    return events


@pytest.mark.parametrize("docname", TOC_PAGES)
def test_page_in_browser(site, browser, docname):
    book, base = site
    url = urljoin(base, f"{book.page(docname)}.html")  # a draft build may use a placeholder
    browser.get_log("performance")  # drop the events of earlier pages
    browser.get_log("browser")
    browser.get(url)
    state = browser.execute_async_script(WAIT_FOR_MATHJAX)
    facts = browser.execute_script(PAGE_FACTS)
    console = browser.get_log("browser")
    network = _network_events(browser)
    problems = []

    # The page loaded without console errors.
    problems += [f"console {e['level']}: {e['message']}" for e in console if e["level"] == "SEVERE"]

    # Every request went to 127.0.0.1, and none failed.
    host = urlsplit(base).netloc
    for event in network:
        params = event["params"]
        if event["method"] == "Network.requestWillBeSent":
            parts = urlsplit(params["request"]["url"])
            if parts.scheme in NETWORK_SCHEMES and parts.netloc != host:
                problems.append(f"request to another host: {params['request']['url']}")
        elif event["method"] == "Network.responseReceived":
            response = params["response"]
            if response.get("status", 200) >= 400:
                problems.append(f"HTTP {response['status']} for {response['url']}")
        elif event["method"] == "Network.loadingFailed" and not params.get("canceled"):
            problems.append(f"request failed: {params.get('errorText')} ({params.get('type')})")

    # Math is typeset wherever the source has math, and nothing raw is left in the text.
    if facts["math"]:
        if state != "typeset":
            problems.append(f"MathJax did not typeset the page: {state}")
        problems += [f"math not typeset: {m!r}" for m in facts["untypeset"]]
    problems += [f"MathJax error: {m!r}" for m in facts["merrors"]]
    problems += [f"raw TeX left in the text: {m.group(0)!r}" for m in RAW_TEX.finditer(facts["text"])]

    # Every image loaded.
    problems += [f"image did not load: {img['src']}" for img in facts["images"] if not img["ok"]]

    # Every internal link resolves: the target is served, and has the anchor if one is named.
    problems += broken_links(facts["links"], host)

    assert not problems, f"{docname}.html:\n" + "\n".join(problems)


_IDS: dict[str, set[str] | None] = {}  # served page -> its element ids (None: not served)


def _ids_of(url: str) -> set[str] | None:
    if url not in _IDS:
        try:
            with urlopen(url, timeout=10) as response:  # noqa: S310  (127.0.0.1 only)
                page = response.read().decode("utf-8", errors="replace")
        except OSError:
            _IDS[url] = None
        else:
            parser = build_book._PageParser()
            parser.feed(page)
            _IDS[url] = parser.ids
    return _IDS[url]


def broken_links(links: list[str], host: str) -> list[str]:
    """The links (absolute, as the browser resolved them) on this site that do not resolve."""
    problems = []
    for link in sorted(set(links)):
        parts = urlsplit(link)
        if parts.scheme not in ("http", "https") or parts.netloc != host:
            continue  # external links are links, not loads: they are not followed offline
        target, fragment = urldefrag(link)
        ids = _ids_of(target)
        if ids is None:
            problems.append(f"link {link}: the target is not served")
        elif fragment and unquote(fragment) not in ids:
            problems.append(f"link {link}: no element with id {fragment!r} on the target")
    return problems


def test_search_works_offline(site, browser):
    """Sphinx's search page finds a lesson with the local index (no search service)."""
    _, base = site
    browser.get(urljoin(base, "search.html?q=mask"))
    deadline = time.monotonic() + PAGE_TIMEOUT
    results = []
    while time.monotonic() < deadline:
        results = browser.execute_script(
            "return Array.from(document.querySelectorAll('#search-results li a')).map(a => a.href);")
        if results:
            break
        time.sleep(0.2)
    assert results, "the search page found nothing for 'mask'"
    assert any("foundations" in r for r in results), results
