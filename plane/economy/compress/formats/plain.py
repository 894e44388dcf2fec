"""Plain text: exact duplicate lines folded, nothing folded by template.

Prose is not machine output: two sentences that differ only in a number say
different things, so only lines repeated exactly (licence texts pasted twice,
a banner printed for every file) are folded. Blank lines are never worth a
marker on their own; they travel inside runs of duplicates.
"""

from __future__ import annotations

from plane.economy.compress.context import NO_CONTEXT, Context
from plane.economy.compress.fold import dedup, exact
from plane.economy.compress.formats import documents
from plane.economy.compress.plan import Plan

_SHORT = 3  # lines this short are separators, not content worth remembering


def compress(lines: list[str], context: Context = NO_CONTEXT) -> Plan:
    plan = Plan(lines)
    dedup(plan, key=_paragraph_key)
    documents.skim(plan)
    return plan


def _paragraph_key(line: str) -> str:
    """Exact, except that short separator lines never break a run of duplicates."""
    stripped = line.strip()
    return "" if len(stripped) <= _SHORT else exact(line)
