"""`plane web` in a real headless Chromium, driven by Playwright: the real
plane (`plane serve`, agents on the scripted LLM server), the real
`plane web` (textual-serve running the real TUI), a real browser.

xterm.js draws on a canvas, so the screen is read from what the browser was
sent: every byte of the websocket's terminal stream, replayed into a VT
emulator (pyte) at the size the browser asked for. Typing is the browser's
own keyboard, and what it reaches is checked at the plane.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.support.answering import until_it_answers
from tests.support.fixtures_plane import CONFIG

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = pytest.mark.skipif(
    not os.access(CHROMIUM, os.X_OK),
    reason="Chromium is not installed (apt-get install chromium): this test needs a real browser",
)
playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
pyte = pytest.importorskip("pyte", reason="pip install pyte")


def _plane(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLANE_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "plane", *args], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def served(tmp_path: Path, scripted_llm) -> Iterator[tuple[Path, str]]:
    """A plane, and `plane web` on a free port: (home, the address it printed)."""
    home = tmp_path / "home"
    config = tmp_path / "agents.yaml"
    config.write_text(CONFIG.replace("{base_url}", scripted_llm.base_url))
    env = {**os.environ, "PLANE_HOME": str(home)}
    daemon = subprocess.Popen(
        [sys.executable, "-m", "plane", "serve", "--config", str(config)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    web = None
    try:
        until_it_answers(home, daemon)
        deadline = time.monotonic() + 30
        web = subprocess.Popen(
            [sys.executable, "-m", "plane", "web", "--port", "0"],  # it says the port it got
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert web.stdout is not None
        line = web.stdout.readline()
        assert line.startswith("The TUI in a browser: http://127.0.0.1:"), line
        assert not line.startswith("The TUI in a browser: http://127.0.0.1:0/"), line
        address = line.split(": ", 1)[1].strip()
        base = address.split("?")[0]
        while True:  # until it listens
            try:
                httpx.get(base, timeout=2)
                break
            except httpx.TransportError:
                assert web.poll() is None and time.monotonic() < deadline, web.stderr
                time.sleep(0.1)
        yield home, address
    finally:
        for process in (web, daemon):
            if process is not None:
                process.terminate()
                process.wait(timeout=20)


class Screen:
    """The terminal the browser was sent, replayed."""

    def __init__(self) -> None:
        self.screen = pyte.Screen(80, 24)
        self.stream = pyte.ByteStream(self.screen)

    def watch(self, page) -> None:
        """Replay what `page`'s websockets carry from now on."""

        def watched(ws) -> None:
            self.opened(ws.url)
            ws.on("framesent", self.sent)
            ws.on("framereceived", self.received)

        page.on("websocket", watched)

    def opened(self, url: str) -> None:
        query = parse_qs(urlsplit(url).query)
        self.screen.resize(int(query["height"][0]), int(query["width"][0]))

    def sent(self, payload: str | bytes) -> None:
        if isinstance(payload, str) and payload.startswith('["resize"'):
            size = json.loads(payload)[1]
            self.screen.resize(size["height"], size["width"])

    def received(self, payload: str | bytes) -> None:
        if isinstance(payload, bytes):
            self.stream.feed(payload)

    def text(self) -> str:
        return "\n".join(self.screen.display)


def _until(page, seen: Screen, *wanted: str, within: float = 30) -> None:
    deadline = time.monotonic() + within
    while not all(w in seen.text() for w in wanted):
        assert time.monotonic() < deadline, f"not on screen: {wanted}\n{seen.text()}"
        page.wait_for_timeout(100)


def test_the_tui_in_a_browser_shows_rows_title_and_a_limit_exchange(served) -> None:
    home, address = served
    base = address.split("?")[0]
    for path in ("/", "/ws", "/static/js/textual.js"):
        refused = httpx.get(base.rstrip("/") + path, timeout=5)
        assert refused.status_code == 401, path
    wrong = httpx.get(base + "?token=wrong", timeout=5)
    assert wrong.status_code == 401

    seen = Screen()
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            seen.watch(page)
            page.goto(address)
            assert "token=" not in page.url  # traded for a session, out of the address bar
            assert page.title() == f"plane — {socket.gethostname()}"
            token = (home / "token").read_text().strip()
            cookies = page.context.cookies()
            assert [c["name"] for c in cookies] == ["plane_session"]
            assert all(token not in c["value"] for c in cookies)  # never the plane's token
            _until(page, seen, "demo · scripted-model · $0.00 of $1.00 today", "○ demo", "○ scout")

            page.click(".textual-terminal")
            # At a person's pace. Keys typed while the conversation had the focus once landed
            # out of order ("/limi 0.t5"): the app now moves the focus before it routes the
            # key (tests/tui/test_paging_and_typing.py sweeps that without a browser).
            page.keyboard.type("/limit 0.5", delay=80)
            _until(page, seen, "│ /limit 0.5 ")  # in the composer
            page.keyboard.press("Enter")
            _until(
                page,
                seen,
                "/limit 0.5",
                "Spending limit set to $0.50 a day. $0.00 spent today, of $0.50 a day.",
            )
        finally:
            browser.close()

    status = json.loads(_plane(home, "status", "--json").stdout)
    demo = next(a for a in status["agents"] if a["name"] == "demo")
    assert demo["limit_usd"] == "0.5"  # the browser's typing reached the plane
