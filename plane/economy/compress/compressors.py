"""The compressors by name: one per format, each `(lines, command) -> Plan`."""

from __future__ import annotations

from collections.abc import Callable

from plane.economy.compress import plain
from plane.economy.compress.plan import Plan

Compressor = Callable[[list[str], "str | None"], Plan]

COMPRESSORS: dict[str, Compressor] = {
    "plain": plain.compress,
    "build": plain.compress,
    "logs": plain.compress,
    "diagnostics": plain.compress,
    "redraw": plain.compress,
    "json": plain.compress,
    "table": plain.compress,
    "search": plain.compress,
    "diff": plain.compress,
    "listing": plain.compress,
    "source": plain.compress,
    "config": plain.compress,
    "mixed": plain.compress,
    "html": plain.compress,
}
