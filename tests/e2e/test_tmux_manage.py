"""The real `plane` command in tmux: managing an agent from the keyboard, and
the line quitting leaves on the terminal (the plane keeps running)."""

from __future__ import annotations

import re
import subprocess

from tests.e2e.test_tmux import PLANE, pytestmark, terminal  # noqa: F401 (the fixture, the skip)


def test_pause_from_the_list_then_quit_says_the_plane_keeps_running(terminal) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    term, _ = terminal
    term.start(f"{PLANE}; sleep 60")  # the shell stays, so the line after the TUI can be read
    term.wait_for(r"demo · scripted-model · \$0\.00 of \$1\.00 today")
    term.keys("C-l")  # the agent list
    screen = term.wait_for(r"p Pause/resume")
    assert re.search(r"d Delete", screen) and re.search(r"e Edit", screen)
    term.keys("p")
    screen = term.wait_for(r"demo · scripted-model · \$0\.00 of \$1\.00 today · paused")
    assert re.search(r"‖ demo", screen)

    term.keys("C-q")
    screen = term.wait_for(r"The plane keeps running")
    assert (
        "The plane keeps running (its agents go on without the TUI); `plane stop` stops it."
        in screen
    )
    status = subprocess.run(
        [str(PLANE), "status"], env={**term.env}, capture_output=True, text=True, timeout=30
    )
    assert status.returncode == 0 and re.search(r"demo\s+paused", status.stdout), status
