"""One plain line at the end of a run: what was not tested here, and how to
get it.

On a laptop without PostgreSQL, Chromium, npm or tmux, `make test` passed
with some eighty tests skipped and said nothing beyond pytest's count. This
plugin reads every skipped test's reason (on the controller under
pytest-xdist: the workers' reports arrive there), sorts the reasons into
what is missing, and says it in one line, before pytest's count:

    Not tested here (81 skipped): PostgreSQL, 40 (apt-get install postgresql); …

A reason no category takes is counted as `other` (`pytest -rs` lists each).
Tests left out by `-m` (`make test-fast`'s tiers) are said too, with the
command that runs them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pytest
from _pytest.terminal import TerminalReporter


@dataclass(frozen=True)
class Missing:
    """What a skipped test needed, the words in its reason that say so, and how to get it."""

    what: str
    words: tuple[str, ...]
    how: str


MISSING = (
    Missing("PostgreSQL", ("postgres",), "pip install -e '.[dev]' brings it; or PLANE_TEST_PG=URL"),
    Missing(
        "Chromium", ("chromium", "playwright"), "apt-get install chromium; pip install playwright"
    ),
    Missing(
        "Claude Code and Codex",
        ("claude code", "codex", "npm"),
        "npm, then make test installs them",
    ),
    Missing("Aider", ("aider",), "make test installs it"),
    Missing("tmux", ("tmux",), "apt-get install tmux"),
    Missing("root-only tests", ("root",), "as root, with a Python the user nobody can run"),
    Missing("Landlock", ("landlock",), "a Linux kernel with Landlock (5.13 or later)"),
    Missing("PID namespaces", ("pid namespace", "needs linux"), "Linux, with user namespaces"),
)


def missing(reason: str) -> Missing | None:
    """The category a skip's reason belongs to, if any."""
    said = reason.lower()
    for kind in MISSING:
        if any(word in said for word in kind.words):
            return kind
    return None


def reason_of(report: pytest.TestReport | pytest.CollectReport) -> str:
    """A skipped test's reason, as pytest keeps it (`Skipped: …`)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr or "")


def untested_line(
    skipped: list[pytest.TestReport | pytest.CollectReport], deselected: int, marks: str = ""
) -> str:
    """The line, or "" when everything that was collected ran. `marks`: the
    run's `-m`; under pytest-xdist the workers deselect, and the controller
    never hears how many (`deselected` is then 0)."""
    counts: Counter[Missing | None] = Counter(missing(reason_of(r)) for r in skipped)
    parts = [f"{kind.what}, {counts[kind]} ({kind.how})" for kind in MISSING if counts[kind]]
    if counts[None]:
        parts.append(f"other, {counts[None]} (pytest -rs lists them)")
    if marks and deselected:  # a tier left out (`-k` and node ids are the operator's own pick)
        parts.append(f"deselected, {deselected} (make test runs every tier)")
    elif marks:
        parts.append(f"what -m {marks!r} leaves out (make test runs every tier)")
    if not parts:
        return ""
    return f"Not tested here ({len(skipped)} skipped): " + "; ".join(parts) + "."


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: TerminalReporter) -> None:
    config = terminalreporter.config
    if hasattr(config, "workerinput"):  # an xdist worker: the controller says it
        return
    skipped = list(terminalreporter.stats.get("skipped", []))
    deselected = len(terminalreporter.stats.get("deselected", []))
    line = untested_line(skipped, deselected, config.getoption("markexpr", "") or "")
    if line:
        terminalreporter.write_line(line)
