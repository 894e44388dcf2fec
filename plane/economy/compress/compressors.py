"""The compressors by name: one per format, each `(lines, command) -> Plan`."""

from __future__ import annotations

from collections.abc import Callable

from plane.economy.compress import (
    build,
    config,
    diagnostics,
    diffs,
    jsondoc,
    listings,
    logs,
    markup,
    mixed,
    plain,
    redraw,
    search,
    source,
    tables,
)
from plane.economy.compress.plan import Plan

Compressor = Callable[[list[str], "str | None"], Plan]

COMPRESSORS: dict[str, Compressor] = {
    "plain": plain.compress,
    "build": build.compress,
    "logs": logs.compress,
    "diagnostics": diagnostics.compress,
    "redraw": redraw.compress,
    "json": jsondoc.compress,
    "table": tables.compress,
    "search": search.compress,
    "diff": diffs.compress,
    "listing": listings.compress,
    "source": source.compress,
    "config": config.compress,
    "mixed": mixed.compress,
    "html": markup.compress,
}
