"""Compiler and linter diagnostics: every distinct diagnostic kept, echoed source dropped.

gcc/clang, rustc, tsc, mypy, ruff, eslint and Python print a location and a
message, then often echo the source line with carets under it. The location
and message lines are the diagnostic and stay (one of each, when the same
message repeats at other columns with no location of its own); the echo is
the agent's own file repeated back and folds — it is one retrieve away. A
location printed on a line of its own (`--> app.py:11:5`) stays, and so does
the headline above it, so no location ever shows under another diagnostic's
message; a note shown for what it names brings its error with it.
"""

from __future__ import annotations

import re

from plane.economy.compress.context import NO_CONTEXT, Context
from plane.economy.compress.fold import dedup, template
from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import Plan, split_folds

_ECHO = lazy(
    r"^\s*(?:\d+\s*)?\|(?:\s|$)|^\s*\|\s*[\^~_|/\\-]|^\s+[\^~]+[\s\^~-]*$|^\s*= (?:note|help): "
    r"|^\s*help: |^\s*\.\.\.$"
)
# A suggested edit (`12 +     ],`, `3 - use x;`) is an echo only beside the gutter of one:
# `1 - Create a string: PASSED` in a test log is not.
_SUGGESTION = lazy(r"^\s*\d+\s*[-+]\s")
_GUTTER = lazy(r"^\s*\d*\s*\|(?:\s|$)")


def compress(lines: list[str], context: Context = NO_CONTEXT) -> Plan:
    plan = Plan(lines)
    fold_echo(plan)
    dedup(plan, key=_template)
    _fold_repeated_rules(plan)
    pinned = _diagnostics(plan)  # folds repeated rules' diagnostics whole: first
    plan.folds = split_folds(plan.normalised(), pinned)
    _attach_notes(plan)
    return plan


_LOCATION = lazy(r"^\s*(?:-->|==>)\s*\S+?:\d+")  # rustc, ruff: `  --> src/app.rs:11:5`
_REPORT = lazy(r"\b(?:error|warning)\b(?:\[\w+\])?:", re.I)
_NOTE = lazy(r"\bnote:")


def _template(line: str) -> str:
    return "" if not line.strip() else template(line)


# A linter's headline with its rule code, its location on the next line (`ruff check
# --output-format full`): `D102 Missing docstring in public method` / `--> app.py:14:9`.
_RULE_HEADLINE = lazy(r"^(?P<code>[A-Z]+\d+) ")


def _diagnostics(plan: Plan) -> list[int]:
    """Lines every diagnostic printed with its location on a line of its own keeps: the
    location, and the headline above it (`error[E0432]: unresolved import`), even when
    that headline repeats one shown for another place. A pair shown before folds.

    A linter's rule past its first PER_RULE diagnostics is the exception: its further
    ones fold whole (headline, location, echoed source), the marker listing each one's
    code and location (`… 40 more D102 at app.py:14:9, app.py:30:5`), as a line-per-
    diagnostic report's do."""
    lines = plan.lines
    seen: set[tuple[str, str]] = set()
    keep: list[int] = []
    rules: dict[str, int] = {}
    for i, line in enumerate(lines):
        if not _LOCATION.match(line):
            continue
        head = next(
            (h for h in range(i - 1, max(-1, i - 4), -1) if lines[h].strip()),
            None,
        )
        if head is None or _ECHO.match(lines[head]):
            continue  # a location quoted inside an echo, not a diagnostic's own
        rule = _RULE_HEADLINE.match(lines[head])
        if rule is not None and head == i - 1:
            code = rule.group("code")
            rules[code] = rules.get(code, 0) + 1
            if rules[code] > PER_RULE:
                _fold_block(plan, head, _block_end(plan, i))
                continue
        pair = (lines[head].strip(), line.strip())
        if pair not in seen:
            seen.add(pair)
            keep += [head, i]
    return keep


def _fold_block(plan: Plan, start: int, end: int) -> None:
    """Fold one diagnostic whole; a fold already over part of it (its echo, a headline
    folded as a repeat) gives that part up, so the block's marker lists its location."""
    folds = []
    for f in plan.folds:
        if f.end <= start or f.start >= end:
            folds.append(f)
            continue
        if f.start < start:
            folds.append(f._replace(end=start))
        if f.end > end:
            folds.append(f._replace(start=end))
    plan.folds = folds
    plan.fold(start, end, "diagnostics")


def _block_end(plan: Plan, location: int) -> int:
    """Where the diagnostic whose location line is given ends: after the source it echoes
    (or a suggested edit) and one blank line."""
    lines = plan.lines
    j = location + 1
    while j < len(lines) and (
        _ECHO.match(lines[j]) or _SUGGESTION.match(lines[j]) or _GUTTER.match(lines[j])
    ):
        j += 1
    if j < len(lines) and not lines[j].strip():
        j += 1
    return j


# A linter's one-line diagnostic: `app.py:12:5: D102 Missing docstring in public method`.
_RULE_LINE = lazy(r"^[^\s:][^:]*?:\d+:(?:\d+:)? (?P<code>[A-Z]+\d+) ")
PER_RULE = 3


def _fold_repeated_rules(plan: Plan) -> None:
    """Past its first PER_RULE diagnostics, a rule's further ones fold, their codes and
    locations listed in the marker (`… 12 more D102 at app.py:12,40`): what folds is the
    message the first ones already showed, for another name."""
    folded = plan.folded_mask()
    seen: dict[str, int] = {}
    fold = [False] * len(plan.lines)
    for i, line in enumerate(plan.lines):
        found = _RULE_LINE.match(line)
        if found is None or folded[i]:
            continue
        code = found.group("code")
        seen[code] = seen.get(code, 0) + 1
        fold[i] = seen[code] > PER_RULE
    i = 0
    while i < len(fold):
        if not fold[i]:
            i += 1
            continue
        j = i
        while j < len(fold) and fold[j]:
            j += 1
        plan.fold(i, j, "rules")
        i = j
    rule_lines = sum(1 for line in plan.lines if _RULE_LINE.match(line))
    if rule_lines * 2 > sum(1 for line in plan.lines if line.strip()):
        # a linter's report, line by line: its folded locations are in the markers' lists
        # (repeats of one message too), so the guard keeps error lines only, as it does
        # for search results
        plan.folds = [
            f._replace(kind="rules")
            if all(_RULE_LINE.match(line) for line in plan.lines[f.start : f.end])
            else f
            for f in plan.folds
        ]
        plan.protect_paths = not all(f.kind == "rules" for f in plan.folds)


def _attach_notes(plan: Plan) -> None:
    """A note (`note: in expansion of macro …`) explains the error or warning nearest
    above it: a note shown shows its report, and if the guard shows a folded note for
    what it names, the report comes with it."""
    folded = plan.folded_mask()
    report = None
    shown: list[int] = []
    for i, line in enumerate(plan.lines):
        if _NOTE.search(line) and report is not None:
            if not folded[i]:
                shown.append(report)
            plan.companions[i] = report
        elif _REPORT.search(line):
            report = i
    if shown:
        plan.folds = split_folds(plan.normalised(), shown)


def fold_echo(plan: Plan) -> None:
    """Fold the source lines and carets a compiler echoes under its diagnostics."""
    lines = plan.lines
    echo = [bool(_ECHO.match(line)) for line in lines]
    for i, line in enumerate(lines):
        if not echo[i] and _SUGGESTION.match(line):
            near = lines[max(0, i - 3) : i + 4]
            echo[i] = any(_GUTTER.match(other) for other in near)
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
