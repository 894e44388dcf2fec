"""JSON: long arrays and maps sampled, structure and every kind of item kept.

Works on the printed lines, not on a parse: tool output is often cut
(`| head -c`), prefixed by warnings, or one object per line (JSON Lines), and
lines are what markers replace. Bracket depth (strings skipped) tells which
lines form one item of which container. In a container with many items, the
first few, the last, and the first item of every distinct shape (its keys)
are kept, and kept containers are sampled in turn; the runs in between fold.
Errors, outliers that carry a unique detail and change points in shape stay
visible through the shape rule and the engine's guard. A long string holding
a document, a log or code (a README in `pip inspect`) has the lines it holds
folded inline by their own compressor (see `strings`).
"""

from __future__ import annotations

from plane.economy.compress.context import NO_CONTEXT, Context
from plane.economy.compress.formats import jsonline, strings
from plane.economy.compress.locations import PAGE_LINE
from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import Plan, lists_paths

HEAD = 3
TAIL = 1
SHAPES = 4  # distinct item shapes kept beyond the head and tail
RECORD = 30  # an object of scalars this small is a record: every field matters
_BRACKET = lazy(r"[\[\]{}]")
_KEY = lazy(r'^\s*"((?:[^"\\]|\\.)*)"\s*:')


class _Depths:
    """Bracket depth before each line and the lowest depth reached within it."""

    def __init__(self, lines: list[str]) -> None:
        self.start: list[int] = []
        self.low: list[int] = []
        depth = 0
        for line in lines:
            self.start.append(depth)
            if '"' in line:
                line = strings.STRING.sub("", line)
            opens = line.count("{") + line.count("[")
            closes = line.count("}") + line.count("]")
            if opens and closes:
                low = depth
                for b in _BRACKET.findall(line):
                    depth += 1 if b in "[{" else -1
                    low = min(low, depth)
            else:
                low = depth - closes
                depth += opens - closes
            self.low.append(low)
        self.start.append(depth)


def compress(lines: list[str], context: Context = NO_CONTEXT) -> Plan:
    plan = Plan(lines, reshape=strings.reshaper(context))
    depths = _Depths(lines)
    _sample(plan, depths, 0, len(lines), min(depths.start[:1] or [0]), 0)
    folded = plan.folded_mask()
    for i, line in enumerate(lines):
        if not folded[i] and len(line) >= strings.LONG_HTML:
            held = jsonline.inline(i, line, context) or strings.inline(i, line, context)
            if held is not None:
                plan.inlines[i] = held._replace(document=is_document(line))
    lists_paths(plan, frozenset({"items"}), "items with paths")
    return plan


def is_document(line: str) -> bool:
    """Whether a line is a JSON document of its own: a page long (a `json.dumps` of a whole
    list, as `pip list --format=json` prints one) and one whole array or object. Its line
    breaks are the `\\n` escapes of its strings: the guard reads the lines they hold."""
    if len(line) <= PAGE_LINE or line.lstrip()[:1] not in "[{":
        return False
    import json  # only a page-long line that starts like JSON gets here

    try:
        json.loads(line)
    except (ValueError, RecursionError):  # nested deeper than Python reads: not for us
        return False
    return True


def _items(depths: _Depths, a: int, b: int, level: int) -> list[tuple[int, int]]:
    """Line ranges of the items of a container whose inside is at `level`."""
    starts = [a]
    for i in range(a + 1, b):
        d = depths.start[i]
        if d == level and depths.start[i + 1] < level:
            b = i  # the container's own closing `]` or `}`: not an item, never folded
            break
        reopens = depths.low[i] <= level < depths.start[i + 1]  # `}, {` ends one, starts one
        if d == level or (d == level + 1 and reopens):
            starts.append(i)
    return [(s, e) for s, e in zip(starts, [*starts[1:], b], strict=True)]


def _sample(plan: Plan, depths: _Depths, a: int, b: int, level: int, nesting: int) -> None:
    if b - a < 2 or nesting > 40:
        return
    items = _items(depths, a, b, level)
    keep = _chosen(plan.lines, depths, items, level)
    run: list[tuple[int, int]] = []
    for n, (s, e) in enumerate(items):
        if n in keep:
            _flush(plan, run)
            run = []
            if e - s > 2:
                inner = max(level, depths.start[s + 1])
                _sample(plan, depths, s + 1, e, inner, nesting + 1)
        else:
            run.append((s, e))
    _flush(plan, run)


def _flush(plan: Plan, run: list[tuple[int, int]]) -> None:
    if run:
        plan.fold(run[0][0], run[-1][1], "items")


def _chosen(
    lines: list[str], depths: _Depths, items: list[tuple[int, int]], level: int
) -> set[int]:
    """Which items of a container stay: all of a short one, else head, tail and new shapes."""
    n = len(items)
    if n <= HEAD + TAIL + SHAPES:
        return set(range(n))
    if n <= RECORD and all(e - s == 1 for s, e in items[:-1]):
        return set(range(n))
    keep = set(range(HEAD)) | set(range(n - TAIL, n))
    shapes: set[tuple[str, ...]] = {_shape(lines, depths, s, e) for s, e in items[:HEAD]}
    for k in range(HEAD, n - TAIL):
        if len(shapes) >= HEAD + SHAPES:
            break
        shape = _shape(lines, depths, *items[k])
        if shape not in shapes:
            shapes.add(shape)
            keep.add(k)
    return keep


def _shape(lines: list[str], depths: _Depths, s: int, e: int) -> tuple[str, ...]:
    """An item's shape: the keys directly inside it, or the kind of its value."""
    if e - s == 1:
        value = _KEY.sub("", lines[s]).strip().rstrip(",")
        return (value[:1] if value[:1] in '"[{tfn' else "0",)
    inner = depths.start[s + 1] if s + 1 < len(depths.low) else 0
    keys = []
    for i in range(s + 1, min(e, s + 200)):
        if depths.start[i] == inner:
            found = _KEY.match(lines[i])
            if found:
                keys.append(found.group(1))
    return tuple(keys[:12])
