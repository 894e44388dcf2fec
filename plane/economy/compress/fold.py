"""The workhorse: de-duplication, adjacent or not, up to what varies by accident.

Machine output repeats itself: the same warning for every file, the same
progress line with another number, the same `Setting up …` for every package.
A line is redundant when a kept line already has its *template* (the line with
numbers, hex ids, timestamps and column padding made uniform); the first
instance is kept verbatim and every later run of redundant lines becomes one
marker. Nothing is summarised: the kept instance is real, the marker counts,
and the ref gives the rest back.
"""

from __future__ import annotations

from collections.abc import Callable

from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import Plan
from plane.economy.compress.salience import subjects

_VARYING = lazy(
    r"0x[0-9a-fA-F]+"  # addresses
    r"|\b[0-9a-fA-F]*\d[0-9a-fA-F]*\b"  # hex ids, hashes, plain numbers as words
    r"|\d+"  # numbers inside words: v2, GLIBC_2, 12ms
)
_SPACES = lazy(r"[ \t]+")

Key = Callable[[str], str]


def template(line: str) -> str:
    """The line with what varies by accident made uniform."""
    return _SPACES.sub(" ", _VARYING.sub("#", line)).strip()


def templates(lines: list[str]) -> list[str]:
    """`template` of each line, the expressions run once over the lines joined (neither
    can match a newline, and a newline is a word's edge as a line's end is)."""
    joined = _SPACES.sub(" ", _VARYING.sub("#", "\n".join(lines)))
    return [line.strip() for line in joined.split("\n")]


def exact(line: str) -> str:
    return line


def dedup(
    plan: Plan,
    start: int = 0,
    end: int | None = None,
    key: Key = template,
    seen: dict[str, int] | None = None,
) -> dict[str, int]:
    """Fold every line of [start, end) whose key a kept line already has.

    Returns the keys seen (key → index of the kept instance) so a caller can
    continue de-duplicating another region against the same memory. A line that
    reports a warning or an error is a repeat only of one about the same subjects
    (`'cgi' is deprecated` does not repeat `'uu' is deprecated`).
    """
    lines = plan.lines
    end = len(lines) if end is None else end
    seen = {} if seen is None else seen
    folded = plan.folded_mask() if plan.folds else None
    flagged = plan.flagged()
    region = (
        lines[start:end]
        if folded is None
        else [lines[i] for i in range(start, end) if not folded[i]]
    )
    keys = _keys(region, key)
    run_start = -1
    for i in range(start, end):
        if folded is not None and folded[i]:
            if run_start >= 0:
                _fold_run(plan, run_start, i)
                run_start = -1
            continue
        k = keys[lines[i]]
        if flagged[i]:
            k += "\0" + "\0".join(subjects(lines[i]))
        if k in seen:
            if run_start < 0:
                run_start = i
            continue
        if run_start >= 0:
            _fold_run(plan, run_start, i)
            run_start = -1
        seen[k] = i
    if run_start >= 0:
        _fold_run(plan, run_start, end)
    return seen


def _keys(lines: list[str], key: Key) -> dict[str, str]:
    """Each distinct line's key, worked out once (templates all at once)."""
    distinct = list(dict.fromkeys(lines))
    if key is template:
        return dict(zip(distinct, templates(distinct), strict=True))
    return {line: key(line) for line in distinct}


def _fold_run(plan: Plan, start: int, end: int) -> None:
    """`[×N]` says the line above, N times over: only for exact copies of it. Lines
    alike up to their numbers (`CXXABI_1.3.2`, `CXXABI_1.3.3`) are `similar`."""
    above = plan.lines[start - 1] if start > 0 else None
    copies = above is not None and all(line == above for line in plan.lines[start:end])
    plan.fold(start, end, "repeat" if copies else "similar")


def middle(plan: Plan, start: int, end: int, head: int, tail: int, kind: str = "lines") -> None:
    """Keep `head` lines and `tail` lines of [start, end) verbatim; fold the middle."""
    if end - start > head + tail:
        plan.fold(start + head, end - tail, kind)
