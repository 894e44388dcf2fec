"""JSON on one physical line (`json.dumps`, `pip list --format=json`, an API's reply):
its containers sampled inside the line, as the line-based reader samples printed ones.

A line holds no line breaks for a fold of whole lines to fall between, so the
line is read as values: brackets and commas outside strings mark each
container's items. A container with many items keeps its first few, its last,
and the first item of every new shape (the keys of an object, the kind of a
scalar); the runs between become inline folds, each item a piece of its own
so the guard can reopen one item without the rest. Kept items are sampled in
turn, and a long string in a kept item holding a document is folded by what
it holds (see `strings`). The pieces are the line's own bytes, cut at item
boundaries; markers hold no quote or backslash.
"""

from __future__ import annotations

from plane.economy.compress.context import NO_CONTEXT, Context
from plane.economy.compress.formats import strings
from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import Inline

LONG_LINE = 2000  # characters: a shorter line is read whole
HEAD = 3
TAIL = 1
SHAPES = 4  # distinct item shapes kept beyond the head and tail
MAX_DEPTH = 40
KIND = "values"  # the fold's kind: its label counts the values it holds
_TOKEN = lazy(r'"(?:[^"\\\n]|\\.)*"|[\[\]{},:]')


class _Container:
    """One array or object of the line: where it opens and closes, and its items."""

    __slots__ = ("close", "items", "open")

    def __init__(self, open_at: int) -> None:
        self.open = open_at
        self.close = -1
        self.items: list[_Item] = []


class _Item:
    """One item of a container: its span (spaces trimmed), key, shape and inner container."""

    __slots__ = ("end", "inner", "key", "shape", "start")

    def __init__(self, start: int, end: int, key: str | None, inner: _Container | None) -> None:
        self.start = start
        self.end = end
        self.key = key
        self.inner = inner
        self.shape: tuple[str, ...] = ()


class _Frame:
    """The scan's place inside one open container."""

    __slots__ = ("after", "colon", "container", "inner", "key")

    def __init__(self, container: _Container) -> None:
        self.container = container
        self.after = container.open + 1  # where the current item's text begins
        self.key: str | None = None
        self.colon = -1  # where the current member's `:` is
        self.inner: _Container | None = None


def inline(index: int, line: str, context: Context = NO_CONTEXT) -> Inline | None:
    """The line with its long containers sampled, or None when it is not such a line."""
    if len(line) < LONG_LINE or line.lstrip()[:1] not in "[{":
        return None
    top = _scan(line)
    if top is None:
        return None
    folds: list[list[_Item]] = []
    _sample(top, folds, 0)
    if not folds:
        return None
    return Inline(index, tuple(_pieces(line, folds, context)), glue="")


def _scan(line: str) -> _Container | None:
    """The outermost container of the line with every container inside it read (one cut
    short is read up to the cut); None when the line is not a JSON array or object."""
    stack: list[_Frame] = []
    top: _Container | None = None
    for found in _TOKEN.finditer(line):
        token = found.group()
        at = found.start()
        if top is not None:
            return None  # something after the outermost container closed
        frame = stack[-1] if stack else None
        if token[0] == '"':
            if frame is None:
                return None
            if line[frame.container.open] == "{" and frame.colon < 0 and frame.key is None:
                frame.key = token[1:-1]
        elif token == ":":
            if frame is None:
                return None
            frame.colon = at
        elif token in "[{":
            container = _Container(at)
            if frame is not None:
                frame.inner = container
            elif line[:at].strip():
                return None
            stack.append(_Frame(container))
        elif frame is None:
            return None
        elif token == ",":
            if not _end_item(line, frame, at):
                return None
        else:  # a closing bracket: of the kind that opened
            if "[]{}".index(token) != "[]{}".index(line[frame.container.open]) + 1:
                return None
            _end_item(line, frame, at)
            frame.container.close = at + 1
            stack.pop()
            if not stack:
                top = frame.container
    if top is None and stack:
        # cut short (`| head -c`): what is open closes at the end of the line
        outermost = stack[0].container
        while stack:
            open_frame = stack.pop()
            _end_item(line, open_frame, len(line))
            open_frame.container.close = len(line)
            if stack:
                stack[-1].inner = open_frame.container
        return outermost
    if top is None or line[top.close :].strip():
        return None
    return top


def _end_item(line: str, frame: _Frame, end: int) -> bool:
    """Close the frame's current item at `end`; False when there is none (`[1,,2]`)."""
    start = frame.after
    while start < end and line[start] in " \t":
        start += 1
    stop = end
    while stop > start and line[stop - 1] in " \t":
        stop -= 1
    frame.after = end + 1
    if stop == start:
        return False
    item = _Item(start, stop, frame.key, frame.inner)
    if item.inner is not None:
        inner = item.inner
        if line[inner.open] == "{":
            item.shape = tuple(i.key or "" for i in inner.items[:12])
        else:
            item.shape = ("[",)
    else:
        value = line[frame.colon + 1 : stop].lstrip() if frame.colon >= 0 else line[start:stop]
        item.shape = (value[:1] if value[:1] in '"tfn' else "0",)
    frame.container.items.append(item)
    frame.key, frame.colon, frame.inner = None, -1, None
    return True


def _sample(container: _Container, folds: list[list[_Item]], depth: int) -> None:
    if depth > MAX_DEPTH:
        return
    items = container.items
    keep = _chosen([item.shape for item in items])
    run: list[_Item] = []
    for n, item in enumerate(items):
        if n in keep:
            if run:
                folds.append(run)
            run = []
            if item.inner is not None:
                _sample(item.inner, folds, depth + 1)
        else:
            run.append(item)
    if run:
        folds.append(run)


def _chosen(shapes: list[tuple[str, ...]]) -> set[int]:
    """Which items stay: all of a short container, else head, tail and new shapes."""
    n = len(shapes)
    if n <= HEAD + TAIL + SHAPES:
        return set(range(n))
    keep = set(range(HEAD)) | set(range(n - TAIL, n))
    seen = set(shapes[:HEAD])
    for k in range(HEAD, n - TAIL):
        if len(seen) >= HEAD + SHAPES:
            break
        if shapes[k] not in seen:
            seen.add(shapes[k])
            keep.add(k)
    return keep


def _pieces(line: str, folds: list[list[_Item]], context: Context) -> list[tuple[str, str | None]]:
    """The line cut into kept text and folded items; each folded item is a piece of its own
    (the separator after it included), so the guard can reopen it alone."""
    cuts: list[tuple[int, int]] = []
    for run in folds:
        for n, item in enumerate(run):
            cuts.append((item.start, run[n + 1].start if n + 1 < len(run) else item.end))
    cuts.sort()
    pieces: list[tuple[str, str | None]] = []
    at = 0
    for start, end in cuts:
        pieces.extend(_kept(line, at, start, context))
        pieces.append((line[start:end], KIND))
        at = end
    pieces.extend(_kept(line, at, len(line), context))
    return [p for p in pieces if p[0]]


def _kept(line: str, a: int, b: int, context: Context) -> list[tuple[str, str | None]]:
    """Kept text, with any long string in it folded by what it holds."""
    out: list[tuple[str, str | None]] = []
    at = a
    for found in strings.STRING.finditer(line, a, b):
        if found.end() - found.start() < strings.LONG_HTML:
            continue
        inside = strings.held(line, found.start() + 1, found.end() - 1, context)
        if inside:
            out.append((line[at : found.start() + 1], None))
            out.extend(inside)
            at = found.end() - 1
    out.append((line[at:b], None))
    return out
