"""Long documents: every heading and each section's opening kept, later paragraphs skimmed.

A 90 KB changelog or manual page re-read on every turn is the largest cost a
document can have. Past a size where that matters, each section keeps its
heading and first paragraph, and every later paragraph keeps its first line
(which says what it is about); the rest of each paragraph folds. Nothing is
rewritten or summarised: kept lines are byte-identical and each fold is one
retrieve away. Short documents are left alone.
"""

from __future__ import annotations

import re

from plane.economy.compress.plan import Inline, Plan

LONG_DOCUMENT = 8_000
OPENING_LINES = 3
LONG_LINE = 320  # characters: a line this long is a paragraph of its own
FIRST_SENTENCE_MIN = 40
FIRST_SENTENCE_MAX = 240
_SENTENCE_END = re.compile(r"[.!?:;][)\]\"']* +(?=\S)")
_UNDERLINE = re.compile(r"^([=\-~^*#+])\1{2,}\s*$")
_MARKDOWN_HEADING = re.compile(r"^#{1,6} |^[A-Z][A-Z0-9 ,()/-]{2,}$")


def skim(plan: Plan, start: int = 0, end: int | None = None) -> None:
    """Fold the tails of paragraphs after each section's first, in a long document."""
    lines = plan.lines
    end = len(lines) if end is None else end
    if sum(len(line) + 1 for line in lines[start:end]) < LONG_DOCUMENT:
        return
    folded = plan.folded_mask()
    seen_paragraph_in_section = False
    i = start
    while i < end:
        if not lines[i].strip() or folded[i]:
            i += 1
            continue
        if is_heading(lines, i):
            seen_paragraph_in_section = False
            i += 1
            continue
        j = i
        while j < end and lines[j].strip() and not folded[j] and not is_heading(lines, j):
            j += 1
        keep = OPENING_LINES if not seen_paragraph_in_section else 1
        if j - i > keep + 1:
            plan.fold(i + keep, j, "paragraph")
        if seen_paragraph_in_section:
            _keep_first_sentence(plan, i)
        seen_paragraph_in_section = True
        i = j


def _keep_first_sentence(plan: Plan, i: int) -> None:
    """A later paragraph written as one long line (HTML shown as text, Markdown without
    hard wraps) keeps its first sentence, as a wrapped paragraph keeps its first line."""
    line = plan.lines[i]
    if len(line) < LONG_LINE or i in plan.inlines:
        return
    end = _SENTENCE_END.search(line, FIRST_SENTENCE_MIN)
    cut = (
        end.end()
        if end and end.end() <= FIRST_SENTENCE_MAX
        else line.rfind(" ", 0, FIRST_SENTENCE_MAX) + 1
    )
    if cut <= 0 or len(line) - cut < LONG_LINE // 2:
        return
    plan.inlines[i] = Inline(i, ((line[:cut], None), (line[cut:], "words")))


def is_heading(lines: list[str], i: int) -> bool:
    line = lines[i]
    if _MARKDOWN_HEADING.match(line) or _UNDERLINE.match(line):
        return True
    return i + 1 < len(lines) and bool(_UNDERLINE.match(lines[i + 1])) and bool(line.strip())
