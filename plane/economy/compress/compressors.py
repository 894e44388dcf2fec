"""The compressors by name: one per format, each `(lines, command) -> Plan`."""

from __future__ import annotations

from collections.abc import Callable

from plane.economy.compress import diffs, jsondoc, listings, plain, search, source, tables
from plane.economy.compress.plan import Plan

Compressor = Callable[[list[str], "str | None"], Plan]

COMPRESSORS: dict[str, Compressor] = {
    "plain": plain.compress,
    "build": plain.compress,
    "logs": plain.compress,
    "diagnostics": plain.compress,
    "redraw": plain.compress,
    "json": jsondoc.compress,
    "table": tables.compress,
    "search": search.compress,
    "diff": diffs.compress,
    "listing": listings.compress,
    "source": source.compress,
    "config": plain.compress,
    "mixed": plain.compress,
    "html": plain.compress,
}
