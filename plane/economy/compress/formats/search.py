"""Search results (grep -n, rg, git grep): grouped by file, context narrowed, the rest counted.

A match line is `path:line:text`; context lines (`path-line-text`, rg -C)
and `--` separators surround it. Context beyond one line on each side of a
match folds; within a file, matches beyond the first few fold but for their
locations: the marker lists each folded match's file and line numbers
(`[… 9 more matches at app.py:12,40,88; util.py:7 ref:…]`), so a location is
never what a fold hides. Matches on error lines stay through the guard.
"""

from __future__ import annotations

from plane.economy.compress.context import NO_CONTEXT, Context
from plane.economy.compress.formats import logs
from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import Plan

# The path has a letter, a dot or a slash in it: `2026-05-09 07:41` (grep over a log with
# no file name in front) is a date, not `2026`, line 05; and a line that starts with a date
# (`2026-05-09T07:41:12`) is a log line, not `2026-05-09T07`, line 41.
_MATCH = lazy(
    r"^(?!\[?\d{4}-\d\d-\d\d)"
    r"(?P<path>(?=[^\s:]*?[A-Za-z_./])[^\s:][^:]*?)(?P<sep>[:=-])(?P<line>\d+)(?P=sep)"
)
_FILE_ONLY = lazy(r"^(?P<path>[^\s:][^:]*?):(?P<count>\d+)$")
PER_FILE = 4
# Past this many kept matches in all, a file's matches fold whole: a search over a whole
# tree (`grep -rn 'def ' src`) shows its first 40 matches and lists every other one by
# file and line number (`… 9 more matches at a.py:3,12`), error lines kept by the guard.
BUDGET = 40
PER_FILE_PAST_BUDGET = 0
CONTEXT = 1


def compress(lines: list[str], context: Context = NO_CONTEXT) -> Plan:
    kinds = [_kind(line) for line in lines]
    located = sum(1 for kind in kinds if kind in ("match", "context"))
    if "match" not in kinds or located < sum(1 for line in lines if line.strip()) / 2:
        # `grep` over one file prints lines, not locations; with no `path:line:` match at
        # all, it is not search output
        return logs.compress(lines, context)
    plan = Plan(lines, protect_paths=False)
    keep = [k == "match" or k == "other" for k in kinds]
    _keep_context(kinds, keep)
    _limit_per_file(lines, kinds, keep)
    i = 0
    while i < len(lines):
        if keep[i]:
            i += 1
            continue
        kind = "matches" if kinds[i] == "match" else "nearby"
        j = i
        while j < len(lines) and not keep[j] and (kinds[j] == "match") == (kind == "matches"):
            j += 1
        plan.fold(i, j, kind)  # touching folds of the two kinds become one marker
        i = j
    return plan


def _kind(line: str) -> str:
    if line == "--":
        return "separator"
    found = _MATCH.match(line)
    if found:
        return "match" if found.group("sep") == ":" else "context"
    return "other"


def _keep_context(kinds: list[str], keep: list[bool]) -> None:
    """Context lines right next to a match stay; the rest of the context folds."""
    for i, kind in enumerate(kinds):
        if kind != "match":
            continue
        for j in range(max(0, i - CONTEXT), min(len(kinds), i + CONTEXT + 1)):
            if kinds[j] == "context":
                keep[j] = True


def _limit_per_file(lines: list[str], kinds: list[str], keep: list[bool]) -> None:
    """After PER_FILE matches in one file (none, once BUDGET matches are kept in all), match
    lines fold, short ones too: the marker names each folded match's location
    (`a.py:12,40`), so what folds is only its text, and a run of short matches costs one
    path and its line numbers. (A lone short match whose marker would be longer than it
    stays as it is: rendering keeps any fold that saves nothing.)"""
    counts: dict[str, int] = {}
    kept = 0
    for i, kind in enumerate(kinds):
        if kind != "match":
            continue
        found = _MATCH.match(lines[i])
        if found is None:  # `_kind` calls a line a match only when the pattern matched it
            continue
        path = found.group("path")
        counts[path] = counts.get(path, 0) + 1
        limit = PER_FILE if kept < BUDGET else PER_FILE_PAST_BUDGET
        if counts[path] > limit:
            keep[i] = False
        else:
            kept += 1
