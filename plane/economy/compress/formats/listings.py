"""Listings and dumps: a verbatim head and tail of every section, the middle counted.

`ls -lR`, `find`, `tree`, `ps`, `df`, `du`, `nm`, `readelf`, `objdump`, `xxd`:
long runs of one kind of row. Repeats (up to addresses, sizes and dates)
fold first; then each section (a directory of `ls -lR`, a table of
`readelf`, the whole of `xxd`) keeps its header, a head and a tail, and the
middle becomes one marker. File names that nothing else shows stay visible
through the engine's guard.
"""

from __future__ import annotations

from plane.economy.compress.context import NO_CONTEXT, Context
from plane.economy.compress.fold import dedup, template
from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import PATH_LINE, Plan
from plane.economy.compress.sections import sample_sections, split_sections

HEAD = 8
TAIL = 3
_ADDRESS = lazy(r"\b[0-9a-f]{6,16}\b")


def compress(lines: list[str], context: Context = NO_CONTEXT) -> Plan:
    plan = Plan(lines)
    dedup(plan, key=_row_key)
    sample_sections(plan, split_sections(lines), HEAD, TAIL, "entries")
    _list_paths(plan)
    return plan


def _list_paths(plan: Plan) -> None:
    """Folds of nothing but path lines (`find`, `git ls-files`) list their paths in the
    marker, each directory once: the paths stay in view, their shared prefixes do not."""
    lines = plan.lines
    plan.folds = [
        fold._replace(kind="paths")
        if all(not lines[i] or PATH_LINE.match(lines[i]) for i in range(fold.start, fold.end))
        and any(lines[i] for i in range(fold.start, fold.end))
        else fold
        for fold in plan.folds
    ]


def _row_key(line: str) -> str:
    """Rows alike up to addresses, sizes, dates and padding are repeats."""
    return template(_ADDRESS.sub("#", line))
