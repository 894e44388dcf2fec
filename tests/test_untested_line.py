"""The run's last line names what was not tested here and how to get it,
from the skipped tests' reasons, on one worker and under pytest-xdist
(whose workers' reports the controller reads). A real pytest, in a
subprocess, on a small suite of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[1]

pytestmark = pytest.mark.slow
"""Each test is a pytest of its own, started in a process (one with two
workers of its own): 0.2-0.6 CPU-seconds a test, and a second or more of
waiting on a loaded machine, so `make test` runs them, not `make test-fast`."""

SUITE = """
import pytest

pytestmark = []

@pytest.fixture
def postgres():
    pytest.skip("no PostgreSQL for the store's tests: none")

def test_on_postgres(postgres):
    pass

@pytest.mark.skipif(True, reason="Chromium is not installed (apt-get install chromium)")
def test_in_a_browser():
    pass

@pytest.mark.skipif(True, reason="tmux is not installed (apt-get install tmux)")
def test_in_tmux():
    pass

@pytest.mark.skipif(True, reason="Claude Code is not installed (make test does)")
def test_claude_code():
    pass

@pytest.mark.skipif(True, reason="tmux is not installed (apt-get install tmux)")
def test_in_tmux_again():
    pass

def test_odd():
    pytest.skip("the moon is full")

@pytest.mark.slow
def test_slow():
    pass

def test_runs():
    pass
"""


ONLY_XDIST = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
"""Of the installed plugins, only pytest-xdist (`-p xdist`): the others
(hypothesis, asyncio, snapshots, timeout) have nothing to do with the line,
and loading them cost each of these pytests (and each worker) ~0.4 CPU-s."""


def run(tmp_path: Path, *args: str) -> list[str]:
    (tmp_path / "test_small.py").write_text(SUITE)
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.support.untested"]\n')
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "xdist", "-q", *args],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO), **ONLY_XDIST},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()


ALL = (
    "Not tested here (6 skipped): PostgreSQL, 1 (pip install -e '.[dev]' brings it; or "
    "PLANE_TEST_PG=URL); Chromium, 1 (apt-get install chromium; pip install playwright); "
    "Claude Code and Codex, 1 (npm, then make test installs them); tmux, 2 (apt-get "
    "install tmux); other, 1 (pytest -rs lists them); "
)


@pytest.mark.parametrize(
    ("workers", "left_out"),
    [
        ([], "deselected, 1 (make test runs every tier)."),
        # The workers deselect; the controller is never told how many.
        (["-n", "2"], "what -m 'not slow' leaves out (make test runs every tier)."),
    ],
)
def test_the_last_lines_say_what_was_not_tested_and_how(
    tmp_path: Path, workers: list[str], left_out: str
) -> None:
    lines = run(tmp_path, *workers, "-m", "not slow")
    said = [line for line in lines if line.startswith("Not tested here")]
    assert said == [ALL + left_out]
    assert lines.index(said[0]) == len(lines) - 2, "the line before pytest's count"


@pytest.mark.parametrize("picked", [["test_small.py::test_runs"], ["-k", "runs"]])
def test_a_run_that_skipped_nothing_says_nothing(tmp_path: Path, picked: list[str]) -> None:
    """Nothing skipped, and no tier left out: tests picked by name are the
    operator's own choice, not something this machine could not run."""
    lines = run(tmp_path, *picked)
    assert not [line for line in lines if line.startswith("Not tested here")], lines
