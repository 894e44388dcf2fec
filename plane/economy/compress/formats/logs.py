"""Logs and stack traces: repeats folded, errors with context, first warnings, head and tail.

A log is mostly the same few lines with other timestamps and ids; those fold
into their first instance. What is left, when it is still long, keeps its
beginning (what ran), its end (how it ended: summaries live there), every
error with a few lines around it, and the first warnings; the rest folds
with a count of what it held. Long stack traces keep their first and last
frames.
"""

from __future__ import annotations

import re

from plane.economy.compress.context import NO_CONTEXT, Context
from plane.economy.compress.fold import Key, dedup, template
from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import Plan, split_folds

HEAD = 12
TAIL = 12
CONTEXT = 2
FIRST_WARNINGS = 3
LONG = HEAD + TAIL + 20
_ERROR = lazy(
    r"\b(?:error|errors|failed|failure|fatal|exception|traceback|denied|panic)\b|Error\b"
    r"|\bE\d{3,}\b|^E\s",
    re.I,
)
_WARNING = lazy(r"\bwarn(?:ing)?s?\b", re.I)
_FRAME = lazy(r'^\s+File "[^"]+", line \d+|^\s+at \S+ \(|^\s+at \S+:\d+|^#\d+ +0x')
_FRAME_OPENING = lazy(r'^[^\S\n]+(?:File "|at )|^#\d', re.M)  # every frame line opens so
FRAMES_KEPT = 3


def compress(lines: list[str], context: Context = NO_CONTEXT) -> Plan:
    return compress_with(lines, template)


def compress_with(lines: list[str], key: Key) -> Plan:
    return compress_plan(Plan(lines), key)


def compress_plan(plan: Plan, key: Key) -> Plan:
    """Fold repeats (lines already folded stay as they are), frames, then the unremarkable.
    The last line stays whatever it repeats: it says how the run ended."""
    dedup(plan, key=key)
    collapse_frames(plan)
    keep_essentials(plan)
    last = next((i for i in range(len(plan.lines) - 1, -1, -1) if plan.lines[i].strip()), None)
    if last is not None:
        plan.folds = split_folds(plan.normalised(), [last])
    return plan


def collapse_frames(plan: Plan) -> None:
    """In a long run of stack frames, keep the first and the last few; fold the middle."""
    lines = plan.lines
    if not _FRAME_OPENING.search("\n".join(lines)):
        return  # no line opens as a frame does (one pass over the text)
    i = 0
    while i < len(lines):
        if not _FRAME.match(lines[i]):
            i += 1
            continue
        frames = [i]
        j = i + 1
        while j < len(lines) and (_FRAME.match(lines[j]) or lines[j].startswith("    ")):
            if _FRAME.match(lines[j]):
                frames.append(j)
            j += 1
        if len(frames) > 2 * FRAMES_KEPT + 1:
            plan.fold(frames[FRAMES_KEPT], frames[-FRAMES_KEPT], "frames")
        i = j


def keep_essentials(plan: Plan) -> None:
    """Beyond head and tail, keep errors with context and the first warnings; fold the rest."""
    lines = plan.lines
    folded = plan.folded_mask()
    open_lines = [i for i in range(len(lines)) if not folded[i]]
    if len(open_lines) <= LONG:
        return
    keep = set(open_lines[:HEAD]) | set(open_lines[-TAIL:])
    flagged = plan.flagged()
    warnings = 0
    for n, i in enumerate(open_lines):
        if not flagged[i]:
            continue
        if _ERROR.search(lines[i]):
            keep.update(open_lines[max(0, n - CONTEXT) : n + CONTEXT + 1])
        elif _WARNING.search(lines[i]) and warnings < FIRST_WARNINGS:
            warnings += 1
            keep.add(i)
    _fold_open_except(plan, open_lines, keep)


def _fold_open_except(plan: Plan, open_lines: list[int], keep: set[int]) -> None:
    run: list[int] = []
    for i in open_lines:
        if i in keep:
            _fold_run(plan, run)
            run = []
        else:
            run.append(i)
    _fold_run(plan, run)


def _fold_run(plan: Plan, run: list[int]) -> None:
    """Fold open lines (they may straddle earlier folds, which the new fold absorbs)."""
    if not run:
        return
    start, end = run[0], run[-1] + 1
    plan.folds = [f for f in plan.folds if f.end <= start or f.start >= end]
    plan.fold(start, end, "log")
