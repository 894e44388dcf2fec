"""Sections of an output and head/tail sampling inside each, shared by several compressors."""

from __future__ import annotations

from bisect import bisect_right

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
    """In each section, keep `head` and `tail` of the lines not yet folded; fold the rest.

    The lines between the first and last one sampled out are all either sampled out
    or folded already, so each section's middle becomes one fold that takes the folds
    inside it in. One mask for the whole plan, read once: a mask per section made the
    time grow with the square of the output (a listing has a section per directory)."""
    folded = plan.folded_mask()
    runs: list[tuple[int, int]] = []
    for start, end in sections:
        open_lines = [i for i in range(start, end) if not folded[i]]
        if len(open_lines) <= head + tail + 2:
            continue
        middle = open_lines[head : len(open_lines) - tail]
        runs.append((middle[0], middle[-1] + 1))
    if not runs:
        return
    starts = [a for a, _ in runs]
    plan.folds = [f for f in plan.folds if not _within(f, runs, starts)]
    for a, b in runs:
        plan.fold(a, b, kind)


def _within(fold: Fold, runs: list[tuple[int, int]], starts: list[int]) -> bool:
    """Whether the fold lies inside one of the runs (sorted, disjoint)."""
    k = bisect_right(starts, fold.start) - 1
    return k >= 0 and fold.end <= runs[k][1]
