"""Diffs (unified, git diff/show/log -p): hunks narrowed to the lines around each change.

What a reader of a diff needs is every file and hunk header, every commit's
header and message, and what each change made of the file. The hunk header
already says where a change is (line numbers, and the enclosing function for
git), so unchanged context folds whole: a `[… 3 unchanged]` marker says how
much stood between two changes. Where lines were replaced (a run of removed
lines straight before a run of added ones) the new text is kept and the old
folds behind `[… N removed lines]`; its ref gives it back when the old version
matters. A long run of added or removed lines (a new file, a deleted module)
keeps its first and last lines around a marker. Paths and names on error
lines in anything folded stay visible through the engine's guard.
"""

from __future__ import annotations

from plane.economy.compress.context import NO_CONTEXT, Context
from plane.economy.compress.plan import Plan

CONTEXT = 0
RUN_HEAD = 1
RUN_TAIL = 1
REPEAT_MIN = 24  # shorter repeated lines (`+    }`) cost less than a marker
_HEADERS = (
    "diff --git ",
    "index ",
    "--- ",
    "+++ ",
    "new file mode",
    "deleted file mode",
    "similarity index",
    "rename from",
    "rename to",
    "old mode",
    "new mode",
    "Binary files",
)


_FILE_HEADERS = ("index ", "--- ", "+++ ", "old mode", "new mode")


def compress(lines: list[str], context: Context = NO_CONTEXT) -> Plan:
    plan = Plan(lines)
    kinds = _kinds(lines)
    _fold_file_headers(plan, lines)
    _narrow_context(plan, kinds)
    _fold_replaced(plan, kinds)
    _shorten_runs(plan, kinds, "+", "added")
    _shorten_runs(plan, kinds, "-", "removed")
    _fold_repeated_changes(plan, kinds)
    return plan


def _kinds(lines: list[str]) -> list[str]:
    """'h' header, '@' hunk header, ' ' context, '+' added, '-' removed, 'o' other."""
    kinds = []
    in_hunk = False
    for line in lines:
        if line.startswith("@@"):
            kinds.append("@")
            in_hunk = True
        elif line.startswith(_HEADERS) and not (
            in_hunk and line[:1] in ("+", "-") and not line.startswith(("--- a/", "+++ b/"))
        ):
            kinds.append("h")
            in_hunk = False
        elif in_hunk and line[:1] in (" ", "+", "-"):
            kinds.append(line[0])
        elif in_hunk and line == "":
            kinds.append(" ")
        else:
            kinds.append("o")
            in_hunk = in_hunk and line.startswith("\\")
    return kinds


def _fold_file_headers(plan: Plan, lines: list[str]) -> None:
    """`index …`, `--- a/…`, `+++ b/…` repeat what `diff --git a/… b/…` already says."""
    for i, line in enumerate(lines):
        if not line.startswith("diff --git "):
            continue
        j = i + 1
        while j < len(lines) and j - i <= 4 and lines[j].startswith(_FILE_HEADERS):
            j += 1
        if j - i >= 3 and lines[j - 1].startswith("+++ "):
            plan.fold(i + 1, j, "header")


def _narrow_context(plan: Plan, kinds: list[str]) -> None:
    near = [False] * len(kinds)
    for i, kind in enumerate(kinds):
        if kind in "+-":
            for j in range(max(0, i - CONTEXT), min(len(kinds), i + CONTEXT + 1)):
                near[j] = True
    i = 0
    while i < len(kinds):
        if kinds[i] != " " or near[i]:
            i += 1
            continue
        j = i
        while j < len(kinds) and kinds[j] == " " and not near[j]:
            j += 1
        plan.fold(i, j, "context")
        i = j


def _fold_replaced(plan: Plan, kinds: list[str]) -> None:
    """The removed half of a replacement folds: the added half right after it is the news."""
    i = 0
    while i < len(kinds):
        if kinds[i] != "-":
            i += 1
            continue
        j = i
        while j < len(kinds) and kinds[j] == "-":
            j += 1
        if j < len(kinds) and kinds[j] == "+":
            plan.fold(i, j, "replaced")
        i = j


def _fold_repeated_changes(plan: Plan, kinds: list[str]) -> None:
    """An added line already shown verbatim earlier (the same bump in ten workflow files)
    folds as a repeat of it; the first instance stays."""
    seen: set[str] = set()
    folded = plan.folded_mask()
    for i, kind in enumerate(kinds):
        line = plan.lines[i]
        if kind != "+" or folded[i] or len(line) < REPEAT_MIN:
            continue
        if line in seen:
            plan.fold(i, i + 1, "similar")
        else:
            seen.add(line)


def _shorten_runs(plan: Plan, kinds: list[str], sign: str, kind: str) -> None:
    i = 0
    while i < len(kinds):
        if kinds[i] != sign:
            i += 1
            continue
        j = i
        while j < len(kinds) and kinds[j] == sign:
            j += 1
        if j - i > RUN_HEAD + RUN_TAIL + 2:
            plan.fold(i + RUN_HEAD, j - RUN_TAIL, kind)
        i = j
