"""Sections of an output and head/tail sampling inside each, shared by several compressors."""

from __future__ import annotations

from plane.economy.compress.fold import uncovered_runs
from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import Fold, Plan

_HEADER = lazy(r"^\S.*:\s*$|^\S[^:]*:$|^[A-Z][\w ]+ (?:section|table|Headers?)\b")


def split_sections(lines: list[str]) -> list[tuple[int, int]]:
    """Line ranges separated by blank lines or by header lines (`Section Headers:`, `./dir:`)."""
    sections: list[tuple[int, int]] = []
    start = 0
    for i, line in enumerate(lines):
        if not line.strip():
            if i > start:
                sections.append((start, i))
            start = i + 1
        elif i > start and _HEADER.match(line):
            sections.append((start, i))
            start = i
    if start < len(lines):
        sections.append((start, len(lines)))
    return sections


def sample_sections(
    plan: Plan, sections: list[tuple[int, int]], head: int, tail: int, kind: str
) -> None:
    """In each section, keep `head` and `tail` of the lines not yet folded; fold the rest."""
    for start, end in sections:
        runs = uncovered_runs(plan, start, end)
        open_lines = [i for a, b in runs for i in range(a, b)]
        if len(open_lines) <= head + tail + 2:
            continue
        middle = open_lines[head : len(open_lines) - tail]
        _fold_indices(plan, middle, kind)


def _fold_indices(plan: Plan, indices: list[int], kind: str) -> None:
    """Fold the given lines, merging with folds already adjacent to them."""
    if not indices:
        return
    chosen = set(indices)
    folded = plan.folded_mask()
    lo = indices[0]
    hi = indices[-1] + 1
    kept_runs: list[tuple[int, int]] = []
    run_start = -1
    for i in range(lo, hi):
        inside = i in chosen or folded[i]
        if inside and run_start < 0:
            run_start = i
        elif not inside and run_start >= 0:
            kept_runs.append((run_start, i))
            run_start = -1
    if run_start >= 0:
        kept_runs.append((run_start, hi))
    plan.folds = [
        f for f in plan.folds if f.end <= lo or f.start >= hi or not _within(f, kept_runs)
    ]
    for a, b in kept_runs:
        plan.fold(a, b, kind)


def _within(fold: Fold, runs: list[tuple[int, int]]) -> bool:
    return any(a <= fold.start and fold.end <= b for a, b in runs)
