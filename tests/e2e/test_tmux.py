"""The real `plane` command in a real terminal: tmux runs it, send-keys
types, capture-pane reads the screen.

`plane` with no argument finds no plane running on the temporary
PLANE_HOME, starts the daemon in the background, and execs the TUI. The
agents answer from the scripted LLM server (a real local HTTP server), so
spend is exact: $0.001 an input token, against a $1.00 default ceiling.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plane.wire.protocol import Usage
from tests.support.fixtures_plane import CONFIG
from tests.support.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None,
    reason="tmux is not installed (apt-get install tmux): this test needs a real terminal",
)

PLANE = Path(sys.executable).with_name("plane")
TMUX_ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
"""The tmux server's environment, without the COLUMNS=80 LINES=24 that the
test session sets (Textual's test harness): the server passes them on, and
the TUI would believe them over the terminal and draw 80x24 at any size."""


class Terminal:
    """One tmux server of its own (-L), so no one else's sessions are touched."""

    def __init__(self, name: str, cwd: Path, env: dict[str, str]) -> None:
        self.socket = name
        self.cwd = cwd
        self.env = env

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-u", "-L", self.socket, *args],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
            env=TMUX_ENV,
        )
        return done.stdout

    def start(self, command: str, width: int = 120, height: int = 35) -> None:
        env = [arg for key, value in self.env.items() for arg in ("-e", f"{key}={value}")]
        self.tmux(
            "new-session",
            "-d",
            "-s",
            "plane",
            "-x",
            str(width),
            "-y",
            str(height),
            "-c",
            str(self.cwd),
            *env,
            command,
        )

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "plane", *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "plane", "-l", text)
        self.keys("Enter")

    def paste(self, text: str) -> None:
        """As a terminal pastes: bracketed (-p), so the app sees one paste, not keys."""
        self.tmux("set-buffer", "-b", "e2e", text)
        self.tmux("paste-buffer", "-p", "-d", "-b", "e2e", "-t", "plane")

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "plane")

    def wait_for(self, pattern: str, within: float = 60) -> str:
        deadline = time.monotonic() + within
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if re.search(pattern, screen):
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{pattern!r} not on screen within {within}s:\n{screen}")

    def close(self) -> None:
        subprocess.run(
            ["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=20, check=False
        )


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[tuple[Terminal, ScriptedLLM]]:
    with ScriptedLLM() as llm:
        (tmp_path / "agents.yaml").write_text(CONFIG.replace("{base_url}", llm.base_url))
        env = {
            "PLANE_HOME": str(tmp_path / "home"),
            "LANG": "C.UTF-8",
            "TERM": "xterm-256color",
            "PATH": f"{PLANE.parent}:{os.environ.get('PATH', '')}",
            "TZ": "UTC",
        }
        term = Terminal(f"plane-e2e-{os.getpid()}", tmp_path, env)
        try:
            yield term, llm
        finally:
            term.close()
            subprocess.run(
                [str(PLANE), "stop"],
                env={**os.environ, **env},
                cwd=tmp_path,
                capture_output=True,
                timeout=60,
                check=False,
            )


def row(screen: str, name: str) -> str:
    """The agent's row as drawn: glyph, name, and figure if any."""
    found = re.search(rf"[●○■] {name}\b[^│]*", screen)
    return " ".join(found.group(0).split()) if found else ""


def title(screen: str) -> str:
    return screen.splitlines()[0].strip()


def test_plane_opens_the_tui_and_the_screen_shows_rows_and_title(terminal) -> None:
    term, llm = terminal
    term.start(str(PLANE))
    term.wait_for(r"demo · scripted-model · \$0\.00 of \$1\.00 today")
    # The whole first frame (tmux may be read while a frame is half written).
    screen = term.wait_for(r"\^n New agent")
    assert row(screen, "demo") == "○ demo"
    assert row(screen, "scout") == "○ scout"
    assert "+ new agent" in screen
    assert title(screen) == "demo · scripted-model · $0.00 of $1.00 today", title(screen)

    llm.reply("The linker lost libssl.", usage=Usage(input_tokens=800))
    term.type("what failed in the last build?")
    screen = term.wait_for(r"○ demo\s+\$0\.80")
    assert row(screen, "demo") == "○ demo $0.80"
    assert row(screen, "scout") == "○ scout"
    screen = term.wait_for(r"resets in")
    assert re.fullmatch(
        r"demo · scripted-model · \$0\.80 of \$1\.00 today · resets in (\d+h \d\dm|\d+m|\d+s)",
        title(screen),
    ), title(screen)
    assert "The linker lost libssl." in screen

    term.type("/limit 5")
    screen = term.wait_for(r"Spending limit set to \$5\.00 a day\.")
    assert re.search(r"you\s+/limit 5", screen)
    screen = term.wait_for(r"\$0\.80 of \$5\.00 today")
    assert title(screen) == "demo · scripted-model · $0.80 of $5.00 today"

    term.keys("M-Down")  # alt+down: Down alone is the composer's (its lines, its history)
    screen = term.wait_for(r"^\s*scout · scripted-model · \$0\.00 of \$1\.00 today")


def test_a_pasted_log_keeps_every_line_in_a_real_terminal(terminal) -> None:
    term, llm = terminal
    term.start(str(PLANE))
    term.wait_for(r"demo · scripted-model")
    log = [
        "ld: error 1: cannot find -lssl",
        "ld: error 2: cannot find -lcrypto",
        "collect2: exit 1",
    ]
    llm.reply("Install libssl-dev.", usage=Usage(input_tokens=10))
    term.paste("\n".join(log))
    screen = term.wait_for(r"collect2: exit 1")
    assert all(line in screen for line in log), screen
    assert "Install libssl-dev." not in screen, "a paste is not sent before Enter"
    term.keys("Enter")
    screen = term.wait_for(r"Install libssl-dev\.")
    you = screen.index("you ")
    for line in log:  # all three in the sent message, in order, above the answer
        assert screen.index(line, you) < screen.index("Install libssl-dev.")


def test_resizing_the_terminal_shrinks_then_folds_the_list(terminal) -> None:
    term, _ = terminal
    term.start(str(PLANE))
    screen = term.wait_for(r"Nothing here yet")
    # As wide as its rows need (demo, scout: 21 columns), leaving the conversation 53.
    assert re.search(r"\n│ ○ demo {12}│", screen), "21 columns of list at 120 wide"
    term.tmux("resize-window", "-t", "plane", "-x", "72", "-y", "30")
    screen = term.wait_for(r"\n│ ○ demo {10}│", within=20)  # 72 less the conversation's 53: 19
    assert "+ new agent" in screen and "Nothing here yet" in screen
    term.tmux("resize-window", "-t", "plane", "-x", "50", "-y", "30")
    deadline = time.monotonic() + 20
    while "+ new agent" in (screen := term.screen()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "○ demo" not in screen, "below 60 columns the list folds away"
    assert "Nothing here yet" in screen
    term.keys("C-l")  # and comes back in place of the conversation
    screen = term.wait_for(r"\+ new agent", within=20)
    assert row(screen, "scout") == "○ scout" and "Nothing here yet" not in screen
    term.keys("Enter")
    term.wait_for(r"Nothing here yet", within=20)
    term.tmux("resize-window", "-t", "plane", "-x", "120", "-y", "35")
    term.wait_for(r"\n│ ○ demo {12}│", within=20)
