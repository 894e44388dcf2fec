"""Tables (CSV, TSV, Markdown, box-drawn, space-aligned): header kept, rows sampled.

A table's meaning is its header and what a row looks like; a few rows from
the top and the bottom show both, and the marker counts the rest. Rows that
carry a unique detail (an error, a file) stay visible through the guard;
repeated rows fold first.
"""

from __future__ import annotations

from plane.economy.compress.context import NO_CONTEXT, Context
from plane.economy.compress.fold import dedup, template
from plane.economy.compress.plan import Plan, lists_paths
from plane.economy.compress.sections import sample_sections, split_sections

HEAD = 10
TAIL = 3


def compress(lines: list[str], context: Context = NO_CONTEXT) -> Plan:
    plan = Plan(lines)
    dedup(plan, key=template)
    sample_sections(plan, split_sections(lines), HEAD, TAIL, "rows")
    lists_paths(plan, frozenset({"rows", "similar", "lines"}), "rows with paths")
    return plan
