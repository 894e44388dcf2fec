"""Tool-output compression: deterministic, retrievable, one compressor per format.

    from plane.economy.compress import compress, expand
    result = compress(output, command="pip install rich")
    result.text    # what the model sees: kept lines verbatim, markers elsewhere
    result.refs    # ref → the exact text each marker stands for
    expand(result.text, result.refs.__getitem__) == output

See `engine` for the contract, `plan` and `markers` for the mechanics,
`formats/` for the compressors, `store` and `retrieve` for getting removed
text back.

Lazy, as Textual's `widgets/__init__.py` is: importing one module of the
package (`markers`, `store`) does not load the engine and its formats; a name
below is imported the first time it is used.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's guard, without importing typing: see plane.tuples

if TYPE_CHECKING:
    from plane.economy.compress.engine import MIN_CHARS, Compressed, compress
    from plane.economy.compress.markers import expand, refs_in

__all__ = ["MIN_CHARS", "Compressed", "compress", "expand", "refs_in"]

_WHERE = {
    "MIN_CHARS": "engine",
    "Compressed": "engine",
    "compress": "engine",
    "expand": "markers",
    "refs_in": "markers",
}


def __getattr__(name: str) -> object:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(f"{__name__}.{where}", fromlist=[name]), name)  # see .formats
    globals()[name] = value
    return value
