"""What a compressor is handed besides its lines: the command, and a way to nest.

Some formats hold others: a Markdown file holds code blocks and tables, a
JSON string holds a README, a Python file its parser rejects is read as a
document with code in it. A compressor never imports the compressor of the
format it holds; it asks `context.compress(lines, kind)` and the engine,
which owns the table of compressors, answers. That keeps the formats free of
import cycles, and lets the engine refuse a hand-back: a text is never given
back to a compressor that is already working on that very text (the one that
handed it over, or any before it), so two formats that each think the other
should handle a text cannot bounce it between them.
"""

from __future__ import annotations

from collections.abc import Callable

from plane.economy.compress.plan import Plan
from plane.tuples import NamedTuple

Nest = Callable[[list[str], "str | None"], Plan]
"""(lines, the format's name or None to let the classifier decide) -> plan."""


def keep_all(lines: list[str], kind: str | None = None) -> Plan:
    """The answer when nesting is refused (or not wired): every line kept."""
    return Plan(list(lines))


class Context(NamedTuple):
    """The command that printed the output (a hint, or None) and the nesting callback."""

    command: str | None = None
    nest: Nest = keep_all

    def compress(self, lines: list[str], kind: str | None = None) -> Plan:
        """A plan for these lines by the compressor of `kind` (None: as classified)."""
        return self.nest(lines, kind)


NO_CONTEXT = Context()

Compressor = Callable[[list[str], Context], Plan]
