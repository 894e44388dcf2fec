"""The real `plane` command in tmux: managing an agent from the keyboard, and
the line quitting leaves on the terminal (the plane keeps running)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.e2e.test_tmux import PLANE, pytestmark, terminal  # noqa: F401 (the fixture, the skip)


def test_pause_from_the_list_then_quit_says_the_plane_keeps_running(terminal) -> None:  # noqa: F811
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


def test_plane_tcp_opens_the_tui_on_a_plane_elsewhere(terminal, tmp_path) -> None:  # noqa: F811
    """`plane --tcp HOST:PORT --token T` from a home with no plane in it: the
    TUI talks to the TCP plane, and starts none of its own."""
    term, _ = terminal
    home = Path(term.env["PLANE_HOME"])
    serving = subprocess.Popen(
        [str(PLANE), "serve", "--tcp", "127.0.0.1:0"],
        env={**os.environ, **term.env},
        cwd=term.cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert serving.stderr is not None
        port = None
        while port is None:
            line = serving.stderr.readline()
            assert line, "the plane did not start"
            if found := re.search(r" and 127\.0\.0\.1:(\d+) ", line):
                port = int(found.group(1))
        token = (home / "token").read_text().strip()
        elsewhere = tmp_path / "elsewhere"
        term.env = {**term.env, "PLANE_HOME": str(elsewhere)}
        term.start(f"{PLANE} --tcp 127.0.0.1:{port} --token {token}; sleep 60")
        term.wait_for(r"demo · scripted-model · \$0\.00 of \$1\.00 today")
        term.keys("C-q")
        screen = term.wait_for(r"The plane at \S+ keeps running")
        assert f"The plane at 127.0.0.1:{port} keeps running" in screen
        assert not (elsewhere / "plane.sock").exists(), "no plane was started here"
    finally:
        serving.terminate()
        serving.wait(timeout=30)
