"""The plane stopped under an open page of `plane web`: the banner says
what starts it again in words that fit a browser. The terminal's "quit
(ctrl+q) and run `plane`" there ended the tab's TUI and opened another in a
terminal; the page reconnects by itself once the plane is back."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from tests.e2e.test_web import CHROMIUM, FLAGS, Screen, _plane, _until, playwright, served

__all__ = ["served"]  # the fixture, used by name

WIDE = {"width": 2400, "height": 720}
"""Wide enough that the banner's sentence is on one line of the terminal."""


def test_a_stopped_plane_says_in_the_browser_what_starts_it_and_the_page_comes_back(
    served, tmp_path
) -> None:
    """`served` wrote its agents.yaml in `tmp_path`: the plane starts again on it."""
    home, address = served
    seen = Screen()
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport=WIDE)
            seen.watch(page)
            page.goto(address)
            _until(page, seen, "○ demo", "○ scout")
            assert _plane(home, "stop").returncode == 0
            _until(
                page,
                seen,
                "The plane is not running; run `plane` on this machine, which starts it in the"
                " background: this page reconnects by itself.",
            )
            assert "ctrl+q" not in seen.text()
            env = {**os.environ, "PLANE_HOME": str(home)}
            again = subprocess.Popen(
                [sys.executable, "-m", "plane", "serve", "--config", str(tmp_path / "agents.yaml")],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                _until_gone(page, seen, "The plane is not running")
            finally:
                again.terminate()
                again.wait(timeout=20)
        finally:
            browser.close()


def _until_gone(page, seen: Screen, text: str, within: float = 60) -> None:
    deadline = time.monotonic() + within
    while text in seen.text():
        assert time.monotonic() < deadline, f"still on screen: {text}\n{seen.text()}"
        page.wait_for_timeout(100)
