"""Compiler and linter diagnostics: every distinct diagnostic kept, echoed source dropped.

gcc/clang, rustc, tsc, mypy, ruff, eslint and Python print a location and a
message, then often echo the source line with carets under it. The location
and message lines are the diagnostic and stay (one of each, when the same
message repeats at other columns with no location of its own); the echo is
the agent's own file repeated back and folds — it is one retrieve away. A
location printed on a line of its own (`--> app.py:11:5`) belongs to the
diagnostic above it and stays, even when another diagnostic is at the same place.
"""

from __future__ import annotations

import re

from plane.economy.compress.fold import dedup, template
from plane.economy.compress.plan import Plan, split_folds

_ECHO = re.compile(
    r"^\s*\d*\s*\|(?:\s|$)|^\s*\|\s*[\^~_|/\\-]|^\s+[\^~]+[\s\^~-]*$|^\s*= (?:note|help): "
    r"|^\s*\d+\s*[-+]\s|^\s*help: |^\s*\.\.\.$"
)


def compress(lines: list[str], command: str | None = None) -> Plan:
    plan = Plan(lines)
    fold_echo(plan)
    dedup(plan, key=_template)
    locations = [i for i, line in enumerate(lines) if _LOCATION.match(line)]
    plan.folds = split_folds(plan.normalised(), locations)
    return plan


_LOCATION = re.compile(r"^\s*(?:-->|==>)\s*\S+?:\d+")  # rustc, ruff: `  --> src/app.rs:11:5`


def _template(line: str) -> str:
    return "" if not line.strip() else template(line)


def fold_echo(plan: Plan) -> None:
    """Fold the source lines and carets a compiler echoes under its diagnostics."""
    lines = plan.lines
    echo = [bool(_ECHO.match(line)) for line in lines]
    i = 0
    while i < len(lines):
        if not echo[i]:
            i += 1
            continue
        j = i
        while j < len(lines) and (
            echo[j] or (not lines[j].strip() and j + 1 < len(lines) and echo[j + 1])
        ):
            j += 1
        plan.fold(i, j, "echo")
        i = j
