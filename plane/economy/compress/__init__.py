"""Tool-output compression: deterministic, retrievable, one compressor per format.

    from plane.economy.compress import compress, expand
    result = compress(output, command="pip install rich")
    result.text    # what the model sees: kept lines verbatim, markers elsewhere
    result.refs    # ref → the exact text each marker stands for
    expand(result.text, result.refs.__getitem__) == output

See `engine` for the contract, `plan` and `markers` for the mechanics,
`store` and `retrieve` for getting removed text back.
"""

from plane.economy.compress.engine import MIN_CHARS, Compressed, compress
from plane.economy.compress.markers import expand, refs_in

__all__ = ["MIN_CHARS", "Compressed", "compress", "expand", "refs_in"]
