"""In the browser, as in the terminal: a held agent's row is a solid red
bar and a paused one a bar of its own (the same Textual rendering, through
`plane web` and xterm.js). Read from the terminal stream the browser was
sent, replayed into a VT emulator, cell by cell with its colours."""

from __future__ import annotations

from tests.e2e.test_web import CHROMIUM, FLAGS, Screen, _plane, _until, playwright, served

__all__ = ["served"]  # the fixture, used by name

ERROR = "ba3c5b"
"""The dark theme's $error (textual-dark), which a held row's bar is drawn in."""


def _background(seen: Screen, text: str) -> str:
    """The background of the first cell of the line that shows `text`."""
    for y, line in enumerate(seen.screen.display):
        if text in line:
            x = line.index(text)
            return str(seen.screen.buffer[y][x].bg)
    raise AssertionError(f"{text!r} is not on screen:\n{seen.text()}")


def _near(a: str, b: str) -> bool:
    """The same colour, but for Textual's rounding when it blends (`b93c5b`)."""
    try:
        pairs = zip(bytes.fromhex(a), bytes.fromhex(b), strict=True)
    except ValueError:  # a named colour ("default"), not a bar's
        return False
    return all(abs(x - y) <= 3 for x, y in pairs)


def test_held_and_paused_rows_are_bars_in_the_browser(served) -> None:
    home, address = served
    assert _plane(home, "send", "demo", "/limit 0").returncode == 0  # a zero ceiling: held
    assert _plane(home, "pause", "scout").returncode == 0
    seen = Screen()
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            seen.watch(page)
            page.goto(address)
            _until(page, seen, "■ demo", "‖ scout", "+ new agent")
            page.wait_for_timeout(500)
            held, paused = _background(seen, "■ demo"), _background(seen, "‖ scout")
            plain = _background(seen, "+ new agent")
            assert _near(held, ERROR), held
            assert paused not in (plain, held), (paused, plain)
        finally:
            browser.close()
