"""The bench's own definition of "salient tokens", written from the issue, not the engine.

A token is salient when it is a location anywhere in the output, counted
broadly: any `dir/name.ext` or `/abs/dir/name.ext` whatever the extension (one
that starts with a letter: `dir/1.2.3` is a version), a bare `name.ext` of a
common source, config, archive or library kind, with its `:line` when it has
one, or a URL to a file (`https://host/pkgs/x-1.0.tar.gz`); or an identifier
of 4+ characters on an error line, a line where an error word stands as a
word (`error`, `failed`, `warning`, `Traceback`, `not found`, `No such file or
directory`, a `TypeError` or `DeprecationWarning` name; not `libgpg-error-dev`
or `test_broken_pipe_error`). Tokens are counted once per sample. A token is
visible when it occurs anywhere in the compressed text; a location `path:12`
also when the text names the file with the line in a list of its line numbers
(`path:3,12,40`), and `src/app/b.py` also when the text writes its directories
once with the entries in braces, as a shell's brace expansion reads
(`src/{app/{a.py,b.py},docs/x.md}`).

Deliberately independent of `plane.economy.compress.salience`: the engine's
guard and the bench's yardstick must not share a bug. (The only exclusions
are bytecode caches and hash-bearing download URLs, which are not locations
anyone acts on.)
"""

from __future__ import annotations

import json
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
    r"(?<![\w./~-])("
    # a URL to a file, host and all (`https://host:8000/simple/x/x-1.0.whl`)
    r"(?:https?|ftp|file)://[\w.-]*(?::\d+)?(?:/[\w.@%+~-]+)*/[\w@%+~-][\w.@%+~-]*"
    r"\.[A-Za-z][A-Za-z0-9_]*"
    r"|(?:/|~/|\./|\.\./)?(?:[\w.@+-]+/)+[\w@+-][\w.@+-]*\.[A-Za-z][A-Za-z0-9_]*(?:\.\d+)*"
    r"(?::\d+)?"
    r"|(?:[\w@+-][\w.@+-]*)\.(?:" + "|".join(_EXTENSIONS) + r")(?:\.\d+)*(?::\d+)?"
    r")(?![\w/])"
)
_SKIP = re.compile(r"__pycache__|\.pyc(?::\d+)?$|/[0-9a-f]{20,}/")
ERROR_LINE = re.compile(
    r"(?<![\w-])(?:errors?|fail(?:s|ed|ure|ures)?|warnings?|exceptions?|traceback|fatal|denied"
    r"|not found|undefined|no such file or directory)(?![\w-])"
    r"|[a-z](?:Error|Exception|Warning)\b",
    re.I,
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
    paths = {p for p in PATH_TOKEN.findall(text) if not _SKIP.search(p)}
    words: set[str] = set()
    for physical in text.splitlines():
        for line in read_lines(physical):
            if ERROR_LINE.search(line):
                words.update(IDENTIFIER.findall(line))
    return Tokens(frozenset(paths), frozenset(words))


DOCUMENT_LINE = 4000  # characters: a JSON document printed on one line is longer


def read_lines(line: str) -> list[str]:
    """The lines a reader reads in one physical line: the line itself, or, for a JSON
    document printed on one line (a page long, one whole array or object: `json.dumps` of
    a list of pages), the lines its strings hold. Such a document's line breaks are its
    `\\n` escapes; each escape starts the line after it, so the names read are the ones
    read in the whole line (`\\nUsage` is `nUsage` either way)."""
    if len(line) <= DOCUMENT_LINE or line.lstrip()[:1] not in "[{" or not _parses(line):
        return [line]
    out: list[str] = []
    start = i = 0
    while True:
        i = line.find("\\", i)
        if i < 0:
            break
        if line.startswith("\\n", i):
            out.append(line[start:i])
            start = i
        i += 2  # the escaped character is never the start of another escape
    out.append(line[start:])
    return out


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


_AT_LINE = re.compile(r"^(.+):(\d+)$")


def visible(tokens: frozenset[str], compressed: str) -> int:
    # as anywhere else in the text, a token shows when it occurs inside a path
    braced = "\n".join(sorted(_brace_expanded(compressed))) if "/{" in compressed else ""
    return sum(1 for token in tokens if token in braced or _shown(token, compressed))


def _brace_expanded(text: str) -> frozenset[str]:
    """Every path a brace expression in the text stands for, nested ones too, as a
    shell expands them: `a/{b/{x.py,y.py},c.py}` is a/b/x.py, a/b/y.py and a/c.py."""
    found: set[str] = set()
    for word in text.split():
        if "{" in word and "/" in word:
            found.update(_expand(word))
    return frozenset(found)


def _expand(word: str) -> list[str]:
    start = word.find("{")
    if start < 0:
        return [word]
    depth, alternatives, last = 0, [], start + 1
    for i in range(start, len(word)):
        if word[i] == "{":
            depth += 1
        elif word[i] == "}":
            depth -= 1
            if depth == 0:
                alternatives.append(word[last:i])
                head, tail = word[:start], word[i + 1 :]
                return [x for a in alternatives for x in _expand(head + a + tail)]
        elif word[i] == "," and depth == 1:
            alternatives.append(word[last:i])
            last = i + 1
    return [word]  # unbalanced: not a brace expression


def _shown(token: str, text: str) -> bool:
    if token in text:
        return True
    at = _AT_LINE.match(token)
    if at is None or at.group(1) + ":" not in text:
        return False
    path, line = at.groups()
    listed = re.compile(re.escape(path) + r":(?:\d+,)*" + line + r"(?![\d])")
    return listed.search(text) is not None


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
