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
from plane.economy.compress.plan import Plan, lists_paths
from plane.economy.compress.sections import sample_sections, split_sections

HEAD = 8
TAIL = 3
_FOLDED = frozenset({"entries", "similar", "lines"})
_ADDRESS = lazy(r"\b[0-9a-f]{6,16}\b")


def compress(lines: list[str], context: Context = NO_CONTEXT) -> Plan:
    plan = Plan(lines)
    dedup(plan, key=_row_key)
    sample_sections(plan, split_sections(lines), HEAD, TAIL, "entries")
    lists_paths(plan, _FOLDED)
    return plan


def _row_key(line: str) -> str:
    """Rows alike up to addresses, sizes, dates and padding are repeats."""
    return template(_ADDRESS.sub("#", line))
