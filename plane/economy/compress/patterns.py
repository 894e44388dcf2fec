"""Regular expressions compiled the first time they are used, not at import.

`plane compress` runs once per shell call, and most of its patterns belong
to formats or tests the input never reaches: compiling all of them at import
cost more than compressing a 4 KB log. `lazy(source)` stands in for
`re.compile(source)`: its `pattern` and `flags` are there at once, and the
first use of anything else compiles it and puts the compiled pattern's
methods on the instance, so later calls go straight to them.
"""

from __future__ import annotations

import re

_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split")


class _Lazy:
    def __init__(self, pattern: str, flags: int) -> None:
        self.pattern = pattern
        self._flags = flags

    def __getattr__(self, name: str) -> object:
        compiled = re.compile(self.pattern, self._flags)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        self.flags = compiled.flags
        self.groups = compiled.groups
        self.groupindex = compiled.groupindex
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r})"


def lazy(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)`, compiled on first use."""
    return _Lazy(pattern, flags)  # type: ignore[return-value]
