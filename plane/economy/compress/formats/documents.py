"""Long documents: every heading and each section's opening kept, later paragraphs skimmed.

A 90 KB changelog or manual page re-read on every turn is the largest cost a
document can have. Past a size where that matters, each section keeps its
heading and first paragraph, and the next few paragraphs keep their first line
(which says what they are about); the rest of each paragraph folds. Further
on in a section, a paragraph that opens with a term (an option of a manual
page, a version of a changelog) still keeps that line, and prose folds whole,
a run of it into one marker. Nothing is rewritten or summarised: kept lines
are byte-identical and each fold is one retrieve away. Short documents are
left alone.
"""

from __future__ import annotations

from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import Inline, Plan

LONG_DOCUMENT = 8_000
OPENING_LINES = 3
SKIMMED_PARAGRAPHS = 4  # paragraphs of a section shown by their first line before prose folds
TERM = 48  # characters: a first line this short is a term, not prose
LONG_LINE = 320  # characters: a line this long is a paragraph of its own
FIRST_SENTENCE_MIN = 40
FIRST_SENTENCE_MAX = 240
_SENTENCE_END = lazy(r"[.!?:;][)\]\"']* +(?=\S)")
_OPTION = lazy(r"^\s*(?:--?|\+)[A-Za-z0-9][\w-]*\b")
_UNDERLINE = lazy(r"^([=\-~^*#+])\1{2,}\s*$")
_MARKDOWN_HEADING = lazy(r"^#{1,6} |^[A-Z][A-Z0-9 ,()/-]{2,}$")


def skim(plan: Plan, start: int = 0, end: int | None = None) -> None:
    """Fold the tails of paragraphs after each section's first, in a long document; past
    the first few paragraphs of a section, prose folds whole and terms keep their line."""
    lines = plan.lines
    end = len(lines) if end is None else end
    if sum(len(line) + 1 for line in lines[start:end]) < LONG_DOCUMENT:
        return
    folded = plan.folded_mask()
    paragraphs = 0  # in this section so far
    last_folded_whole = -1  # end of the last paragraph folded whole, blank lines after it
    i = start
    while i < end:
        if not lines[i].strip() or folded[i]:
            i += 1
            continue
        if is_heading(lines, i):
            paragraphs = 0
            last_folded_whole = -1
            i += 1
            continue
        j = i
        while j < end and lines[j].strip() and not folded[j] and not is_heading(lines, j):
            j += 1
        paragraphs += 1
        if paragraphs > SKIMMED_PARAGRAPHS and not _is_term(lines[i]):
            first = i
            while first > last_folded_whole >= 0 and not (
                lines[first - 1].strip() or folded[first - 1]
            ):
                first -= 1  # the blank lines since the last whole fold: a run is one marker
            plan.fold(first if first == last_folded_whole else i, j, "paragraph")
            last_folded_whole = j
        else:
            keep = OPENING_LINES if paragraphs == 1 else 1
            if j - i > keep + 1:
                plan.fold(i + keep, j, "paragraph")
            if paragraphs > 1:
                _keep_first_sentence(plan, i)
            last_folded_whole = -1
        i = j


def _is_term(line: str) -> bool:
    """A short first line names what its paragraph is about (`Version 1.2`, `Exit
    status:`), and so does an option opening a line (`-depth  Process each directory…`):
    an index worth keeping. A longer line is the start of prose."""
    return len(line.strip()) <= TERM or _OPTION.match(line) is not None


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
