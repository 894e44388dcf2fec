"""The bench's own definition of "salient tokens", written from the issue, not the engine.

A token is salient when it is path-like anywhere in the output (`dir/name.ext`,
`/abs/dir/name.ext`, `name.ext`, `name.ext:12`, for common source, config, archive and library
extensions), or an identifier of 4+ characters on a line that mentions error,
fail, warning, exception, traceback, fatal, denied, not found or undefined
(case-insensitive). Tokens are counted once per sample. A token is visible
when it occurs anywhere in the compressed text.

Deliberately independent of `plane.economy.compress.salience`: the engine's
guard and the bench's yardstick must not share a bug.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_EXTENSIONS = (
    # source
    "py pyi pyx js mjs cjs ts tsx jsx go rs c h cc cpp cxx hpp hh java kt cs rb php sh bash pl lua"
    " swift scala m css html mk cmake gradle md rst txt"
    # config
    " json yaml yml toml ini cfg conf xml lock env"
    # archives
    " tar gz tgz zip whl deb rpm jar bz2 xz 7z"
    # libraries and objects
    " so a dll dylib o lib"
).split()
# An absolute or home-relative path (`/usr/lib/x.py`, `~/a/b.rs`) is one token, leading
# slash included: the lookbehind alone would refuse every start inside it and so miss it.
PATH_TOKEN = re.compile(
    r"(?<![\w./~-])((?:/|~/)?(?:[\w.@+-]+/)*[\w@+-][\w.@+-]*\.(?:"
    + "|".join(_EXTENSIONS)
    + r")(?:\.\d+)*(?::\d+)?)(?![\w/])"
)
ERROR_LINE = re.compile(
    r"error|fail|warning|exception|traceback|fatal|denied|not found|undefined", re.I
)
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")


@dataclass(frozen=True)
class Tokens:
    paths: frozenset[str]
    error_words: frozenset[str]  # identifiers on error/warning lines

    @property
    def all(self) -> frozenset[str]:
        return self.paths | self.error_words


def salient(text: str) -> Tokens:
    paths = set(PATH_TOKEN.findall(text))
    words: set[str] = set()
    for line in text.splitlines():
        if ERROR_LINE.search(line):
            words.update(IDENTIFIER.findall(line))
    return Tokens(frozenset(paths), frozenset(words))


def visible(tokens: frozenset[str], compressed: str) -> int:
    return sum(1 for token in tokens if token in compressed)


def error_lines(text: str) -> list[str]:
    """Distinct lines that mention an error or a warning."""
    seen: dict[str, None] = {}
    for line in text.splitlines():
        if ERROR_LINE.search(line) and line.strip():
            seen.setdefault(line, None)
    return list(seen)


_VARYING = re.compile(r"0x[0-9a-fA-F]+|\d+")


def line_shape(line: str) -> str:
    """A line with its numbers and addresses made uniform and its spacing collapsed: two
    error lines of one shape differ only by a count, a line number or an address."""
    return " ".join(_VARYING.sub("#", line).split())
