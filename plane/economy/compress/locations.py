"""What a location is: any `dir/name.ext`, a bare `name.ext` of a known kind, a URL to a file.

Shared by the guard (which keeps locations visible) and the labels of folds that list
the locations they hold.
"""

from __future__ import annotations

from plane.economy.compress.patterns import lazy

PAGE_LINE = 4000  # characters: a line longer than this is a page, not a line of output

# Extensions that make a bare `name.ext` a file (`app.py`, `libz.so.1`): without a
# directory, `e.g.` and `self.value` would be files too.
EXT = (
    "py|pyi|pyx|js|mjs|cjs|ts|tsx|jsx|go|rs|c|h|cc|cpp|cxx|hpp|hh|java|kt|cs|rb|php|sh|bash"
    "|pl|lua|swift|scala|m|json|yaml|yml|toml|ini|cfg|conf|xml|lock|env|txt|md|rst|html|css"
    "|mk|cmake|gradle|tar|gz|tgz|zip|whl|deb|rpm|jar|bz2|xz|7z|so|a|dll|dylib|o|lib"
)
# A location: any `dir/name.ext` (the extension starts with a letter: `dir/1.2.3` is a
# version), a bare `name.ext` of a known kind, or a URL to a file; `:line` included.
_LOCATION = lazy(
    r"(?<![\w./~-])("
    r"(?:https?|file)://[\w.-]+(?::\d+)?/(?:[\w.@%+~-]+/)*[\w@%+~-][\w.@%+~-]*\.[A-Za-z]\w{0,9}"
    r"|(?:/|~/|\./|\.\./)?(?:[\w.@+-]+/)+[\w@+-][\w.@+-]*\.[A-Za-z]\w{0,9}(?:\.\d+)*(?::\d+)?"
    r"|[\w@+-][\w.@+-]*\.(?:" + EXT + r")(?:\.\d+)*(?::\d+)?"
    r")(?![\w/])"
)
# Not locations an agent acts on: bytecode caches, and URLs that carry a content hash
# (a package index's `/packages/3c/ab/96f2…/x.whl`), which no one types or opens.
_NOT_A_LOCATION = lazy(r"__pycache__/|\.py[co](?::\d+)?$")
_HASH_SEGMENT = lazy(r"/[0-9a-f]{16,}(?:/|$)|[#=][0-9a-f]{32,}")


def locations(text: str) -> list[str]:
    """The locations in a text: files and URLs to files, as the guard keeps them."""
    return [
        found
        for found in _LOCATION.findall(text)
        if not _NOT_A_LOCATION.search(found)
        and not ("://" in found and _HASH_SEGMENT.search(found))
    ]
