"""One compressor per format, each `compress(lines, context) -> Plan`, loaded when first used.

The classifier names a format; `compressor(name)` imports that format's
module only then, so a command that compresses one output loads one or two
of these modules, not all of them. Formats that hold other formats reach
them through the context's nesting callback (see `..context`), never by
importing each other in a circle.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's guard, without importing typing: see plane.tuples

if TYPE_CHECKING:
    from plane.economy.compress.context import Compressor

MODULES = {
    "plain": "plain",
    "build": "build",
    "logs": "logs",
    "diagnostics": "diagnostics",
    "redraw": "redraw",
    "json": "jsondoc",
    "table": "tables",
    "search": "search",
    "diff": "diffs",
    "listing": "listings",
    "source": "source",
    "config": "config",
    "mixed": "mixed",
    "html": "markup",
}
"""Format name (what the classifier says) → module in this package."""


def compressor(name: str) -> Compressor:
    """The compressor of a format; KeyError for a name no format has."""
    # The import statement's own function, not importlib's: importing importlib loads
    # warnings too, which nothing else in a `plane compress` call does.
    module = __import__(f"{__name__}.{MODULES[name]}", fromlist=["compress"])
    found: Compressor = module.compress
    return found
