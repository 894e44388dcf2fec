"""Long JSON strings holding a document, a log or code: the lines they hold, folded inline.

`pip inspect` prints each package's README as one JSON string, `\\n` escapes
and all: a page of prose on one physical line, which no fold of whole lines
can touch and which the guard must keep whole if it names anything an error
line names. Such a string is split at its `\\n` escapes into the lines it
holds; those go to the compressor their content calls for, as any output
would, and its folds become inline folds of the one physical line. Kept
pieces are byte-identical, the markers hold no quote or backslash (the line
stays valid JSON), and the guard treats each held line as a line of its own.
HTML text with no line breaks (API reference documentation) is held the same
way, block by block (`<p>`, `<li>`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from plane.economy.compress.classify import classify
from plane.economy.compress.context import NO_CONTEXT, Context
from plane.economy.compress.formats import documents
from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import Inline

LONG_STRING = 1024  # characters: a shorter string is a value, not a document
LONG_HTML = 400  # an HTML string shorter than this is a sentence or two
MIN_LINES = 8  # held lines: fewer are not worth a compressor
MIN_BLOCKS = 3  # HTML blocks (`<p>`, `<li>`) in a string without lines: fewer stay whole
OPENING = 6  # lines of a held document kept before its headings alone
_DOCUMENTS = ("plain", "mixed", "html")
GLUE = "\\n"
STRING = lazy(r'"(?:[^"\\\n]|\\.)*"')  # a JSON string, quotes included
_ESCAPE = lazy(r"\\.")
_BLOCK = lazy(r"<(?:p|ul|ol|li|dl|dt|dd|h[1-6]|pre|table|tr|note|important)\b", re.I)


def reshaper(context: Context) -> Callable[[int, str], Inline | None]:
    """`inline`, nesting through this context: a plan's `reshape`."""
    return functools.partial(inline, context=context)


def inline(index: int, line: str, context: Context = NO_CONTEXT) -> Inline | None:
    """This line with the long strings in it folded by what they hold, or None."""
    pieces: list[tuple[str, str | None]] = []
    at = 0
    for found in STRING.finditer(line):
        if found.end() - found.start() < LONG_HTML:
            continue
        inside = held(line, found.start() + 1, found.end() - 1, context)
        if inside:
            pieces.append((line[at : found.start() + 1], None))
            pieces.extend(inside)
            at = found.end() - 1
    if not pieces:
        return None
    pieces.append((line[at:], None))
    return Inline(index, tuple(p for p in pieces if p[0] or p[1]), glue=GLUE)


def held(line: str, start: int, end: int, context: Context) -> list[tuple[str, str | None]]:
    """The pieces of line[start:end] (a string's inside), folded by what they hold, or none."""
    lines = _held_lines(line, start, end)
    if len(lines) >= MIN_LINES and end - start >= LONG_STRING:
        kinds = _fold_kinds([line[a:b] for a, b in lines], context)
        if not any(kinds):
            return []
        pieces: list[tuple[str, str | None]] = []
        for n, ((a, b), kind) in enumerate(zip(lines, kinds, strict=True)):
            if n:
                pieces.append((GLUE, None))
            pieces.append((line[a:b], kind))
        return pieces
    blocks = _held_blocks(line, start, end)
    if len(blocks) < MIN_BLOCKS:
        return []
    # An HTML document with no line breaks (API reference text): its first block says
    # what the thing is; the guard reopens any later one naming what nothing else shows.
    return [(line[a:b], None if n == 0 else "paragraphs") for n, (a, b) in enumerate(blocks)]


def _held_lines(line: str, start: int, end: int) -> list[tuple[int, int]]:
    """Spans of the lines a string holds, between its `\\n` escapes (`\\\\n` is not one)."""
    spans = []
    begin = start
    for escape in _ESCAPE.finditer(line, start, end):
        if escape.group() == GLUE:
            spans.append((begin, escape.start()))
            begin = escape.end()
    spans.append((begin, end))
    return spans


def _held_blocks(line: str, start: int, end: int) -> list[tuple[int, int]]:
    """Spans of the HTML blocks a string holds, each from its opening tag to the next."""
    cuts = [start, *(m.start() for m in _BLOCK.finditer(line, start, end) if m.start() > start)]
    return [(a, b) for a, b in zip(cuts, [*cuts[1:], end], strict=True)]


def _fold_kinds(held: list[str], context: Context) -> list[str | None]:
    """For each held line, the kind of fold its compressor chose, or None to keep it."""
    name = classify("\n".join(held))
    if name in _DOCUMENTS:
        return _outline(held)
    plan = context.compress(held, name)
    if plan.view_of is not None:  # a rendering cannot stand inside a string
        return [None] * len(held)
    kinds: list[str | None] = [None] * len(held)
    for fold in plan.normalised():
        for i in range(fold.start, fold.end):
            kinds[i] = fold.kind
    return kinds


def _outline(held: list[str]) -> list[str | None]:
    """A document held in data (a package's README in its metadata) is a field's value, not
    what the agent opened: its opening lines and headings say what it is, the rest folds."""
    return [
        None if i < OPENING or documents.is_heading(held, i) else "paragraph"
        for i in range(len(held))
    ]
