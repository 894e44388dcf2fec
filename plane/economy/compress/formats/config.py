"""Config (YAML, TOML, INI, conf files, lock files): comments dropped, generated blocks folded.

In a config file the settings are the content; commented-out defaults and
blank lines fold. Generated files repeat one block shape hundreds of times
(`[[package]]` in a lock file, one stanza per host): the first blocks of each
shape and the last stay, the others fold. Settings are never rewritten.
"""

from __future__ import annotations

from plane.economy.compress.context import NO_CONTEXT, Context
from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import Plan

SAME_SHAPE_KEPT = 3
_COMMENT = lazy(r"^\s*(?:#|;|//)|^\s*$")
_KEY = lazy(r"^\s*(?:- )?\"?([\w.\-/ ]+?)\"?\s*(?:=|:(?:\s|$))")
_TOP = lazy(r"^(?:\[|[\w\"'.-][^=:]*[=:]|- |[\w.-]+\s*\{?$)")


def compress(lines: list[str], context: Context = NO_CONTEXT) -> Plan:
    plan = Plan(lines)
    _fold_comments(plan)
    _fold_repeated_blocks(plan)
    fold_long_lists(plan)
    return plan


def fold_long_lists(plan: Plan, head: int = 3, tail: int = 1) -> None:
    """Runs of lines alike in indent and opening (`{ url = …`, `- name: …`) keep head and tail."""
    lines = plan.lines
    folded = plan.folded_mask()
    i = 0
    while i < len(lines):
        lead = _lead(lines[i])
        j = i + 1
        while j < len(lines) and not folded[j] and _lead(lines[j]) == lead:
            j += 1
        if lead and not folded[i] and j - i > head + tail + 3:
            plan.fold(i + head, j - tail, "items")
        i = j


def _lead(line: str) -> str:
    stripped = line.lstrip()
    return line[: len(line) - len(stripped)] + stripped[:6] if stripped else ""


def _fold_comments(plan: Plan) -> None:
    lines = plan.lines
    i = 0
    while i < len(lines):
        if not _COMMENT.match(lines[i]):
            i += 1
            continue
        j = i
        while j < len(lines) and _COMMENT.match(lines[j]):
            j += 1
        plan.fold(i, j, "comments")
        i = j


def _blocks(lines: list[str]) -> list[tuple[int, int]]:
    """Runs of lines from one top-level line (no indent, not a comment) to the next."""
    sections = [i for i, line in enumerate(lines) if line.startswith("[")]
    starts = (
        sections
        if len(sections) >= 3
        else [
            i
            for i, line in enumerate(lines)
            if line and not line[0].isspace() and not _COMMENT.match(line) and _TOP.match(line)
        ]
    )
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    return list(zip(starts, [*starts[1:], len(lines)], strict=True))


def _fold_repeated_blocks(plan: Plan) -> None:
    lines = plan.lines
    seen: dict[tuple[str, ...], int] = {}
    run: list[tuple[int, int]] = []
    for start, end in _blocks(lines):
        shape = _shape(lines, start, end)
        count = seen.get(shape, 0) + 1
        seen[shape] = count
        if end - start > 1 and count > SAME_SHAPE_KEPT:
            run.append((start, end))
            continue
        _flush(plan, run)
        run = []
    _flush(plan, run)


def _flush(plan: Plan, run: list[tuple[int, int]]) -> None:
    if len(run) > 1:
        plan.fold(run[0][0], run[-2][1], "similar")  # the last block of a run stays


def _shape(lines: list[str], start: int, end: int) -> tuple[str, ...]:
    keys = []
    for line in lines[start : min(end, start + 60)]:
        found = _KEY.match(line)
        if found:
            keys.append(found.group(1).strip())
    header = (
        lines[start].split("=")[0].split(":")[0].strip() if lines[start].startswith("[") else ""
    )
    return (header, *keys[:20])
