"""agents.yaml read safely: a bounded YAML reader that knows each value's line.

The reading is bounded before YAML sees a byte of the file: a file that is
not UTF-8 text, is too large, nests too deep, or whose aliases expand past a
fixed number of values is refused with its line, so no file can hang the
start or exhaust memory (an alias bomb is a few hundred bytes). The bounds
grow with the file, as its honest cost does: 10,000 agents are read, a bomb
of any size is not. What it reads
keeps its lines, so a problem found later (plane/config/ validates) still
names the line it is on.

Where ruamel's C parser (libyaml, `ruamel.yaml.clib`) is installed, a file
is read through it: five times less CPU than ruamel's own parser, which
read 100,000 agents in 8.7 s. Its tokens are counted against the same bounds
first, in C, before anything is built; a file that crosses one, or that the C
parser cannot read, is read again by the Python reader, whose refusal (with
its line) is the one the file gets. Both build the same values, lines and all.
"""

from __future__ import annotations

import codecs
import functools
import importlib
import os
import stat
from decimal import Decimal
from pathlib import Path
from typing import Any, NoReturn

from ruamel.yaml import YAML, tokens
from ruamel.yaml.constructor import ConstructorError, RoundTripConstructor
from ruamel.yaml.error import YAMLError
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.scanner import RoundTripScanner, ScannerError

from plane.errors import ConfigError

MAX_CONFIG_BYTES = 4 << 20
"""A config is read whole, so its size is bounded: 100,000 agents of one line
each fit (`  agent-000001: {limitUsd: 2}`, 30 bytes). Reading holds about
120 bytes of memory a byte of the file, so the largest takes ~500 MB."""
FREE_TOKENS = 10_000
"""YAML tokens (keys, values, brackets) any file may have, whatever its size."""
TOKENS_PER_3_CHARACTERS = 2
"""Past `FREE_TOKENS`, at most two tokens every three characters read, checked
as the file is read. Each token takes about the same time (~20 µs, nesting
being bounded), so the read costs in proportion to the file's size, and a
file denser than any honest one is refused early instead of read whole.
Honest files have a token every 1.7 to 5 characters (`  agent-0001: {}` has 5
in 17; compact JSON with short names, `"a1":{},`, one every 1.8); the
densest YAML has one a character (`[1,1,1,…]`)."""
MAX_DEPTH = 32
"""Nesting levels of mappings and lists; agents.yaml needs four."""
FREE_VALUES = 50_000
"""Values any file may expand to once its aliases are expanded."""
VALUES_PER_CHARACTER = 1
"""Past `FREE_VALUES`, values a character of the file may expand to. Written
out, a value takes a character or more; an alias used as a template (`agent:
*base`) expands to a few values in twenty characters. A billion-laughs file
is tiny and expands to a billion."""


def _c_parser() -> Any:
    """ruamel's C parser; None where `ruamel.yaml.clib` is not installed."""
    try:
        return importlib.import_module("_ruamel_yaml").CParser
    except ImportError:
        return None


CParser = _c_parser()


def read_file(path: Path) -> bytes:
    """The file's bytes, at most one more than the limit. Opened without
    blocking, so a FIFO named by mistake is refused instead of waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror}.") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise ConfigError(f"Cannot read {path}: it is a directory, not a file.")
        if not stat.S_ISREG(mode):
            raise ConfigError(f"Cannot read {path}: it is not a regular file.")
        with os.fdopen(fd, "rb", closefd=False) as file:
            return file.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror}.") from None
    finally:
        os.close(fd)


def as_text(raw: bytes, source: str) -> str:
    """UTF-8 text, or one sentence saying what the bytes are instead."""
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{source}: the file is over {MAX_CONFIG_BYTES >> 20} MiB; not a config.")
    if raw.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise ConfigError(f"{source}: the file is UTF-32 text; save it as UTF-8.")
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or _utf16_without_bom(raw):
        raise ConfigError(f"{source}: the file is UTF-16 text; save it as UTF-8.")
    raw = raw.removeprefix(codecs.BOM_UTF8)
    if (nul := raw.find(b"\0")) >= 0:
        line = raw.count(b"\n", 0, nul) + 1
        raise ConfigError(f"{source} line {line}: a NUL byte; this is a binary file, not YAML.")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{source} line {line}: byte 0x{raw[exc.start]:02x} is not UTF-8 text; "
            "save the file as UTF-8."
        ) from None


def _utf16_without_bom(raw: bytes) -> bool:
    """ASCII saved as UTF-16: every other byte is a NUL."""
    half = len(raw) // 2
    return half >= 2 and max(raw[0::2].count(0), raw[1::2].count(0)) >= half * 0.8


def document(text: str, source: str) -> Any:
    """The YAML as read (ruamel's round-trip types, which know their lines)."""
    if CParser is not None and within_bounds(text):
        try:
            return read_in_c(text)
        except Exception:  # the Python reader says what is wrong, and where
            pass
    return read_in_python(text, source)


_OPENS = {
    tokens.FlowMappingStartToken,
    tokens.FlowSequenceStartToken,
    tokens.BlockMappingStartToken,
    tokens.BlockSequenceStartToken,
}
_CLOSES = {tokens.FlowMappingEndToken, tokens.FlowSequenceEndToken, tokens.BlockEndToken}


def within_bounds(text: str) -> bool:
    """The file's tokens, scanned in C, stay within the Python reader's
    bounds (`_BoundedScanner`'s: its density, its depth), so building it
    costs what its size does. False as soon as one is crossed, or the
    scanner fails: the Python reader then refuses it where it should. False
    too at an explicit tag (`!!str 5`), which the Python reader keeps as
    written and the C parser's nodes do not, and at a directive (`%YAML 1.1`,
    `%TAG`), which the Python reader follows and the C parser's values do not
    (they are read by YAML 1.2 whatever the file says)."""
    scanner = CParser(text)
    taken = depth = 0
    try:
        while (token := scanner.get_token()) is not None:
            taken += 1
            if taken > FREE_TOKENS + token.end_mark.index * TOKENS_PER_3_CHARACTERS // 3:
                return False
            if type(token) in _OPENS:
                depth += 1
                if depth > MAX_DEPTH:
                    return False
            elif type(token) in _CLOSES:
                depth -= 1
            elif type(token) is tokens.TagToken or type(token) is tokens.DirectiveToken:
                return False
    except YAMLError:
        return False
    return True


def read_in_c(text: str) -> Any:
    """The YAML through the C parser, unbounded: for a text `within_bounds`."""
    loader = _c_loader()(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def read_in_python(text: str, source: str) -> Any:
    """The Python reader, bounded as it reads (`_BoundedScanner`)."""
    yaml = YAML(typ="rt")
    yaml.Scanner = _BoundedScanner
    yaml.Constructor = _Constructor
    try:
        return yaml.load(text)
    except ReaderError as exc:
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        char = f"U+{exc.character:04X}" if isinstance(exc.character, int) else "a character"
        raise ConfigError(
            f"{source} line {line}: not valid YAML ({char} is a control character; "
            "is this a binary file?)."
        ) from None
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        if isinstance(exc, _TooMuch):
            raise ConfigError(f"{source}{where}: {exc.problem}; not read further.") from None
        raise ConfigError(f"{source}{where}: not valid YAML ({_yaml_problem(exc)}).") from None
    except RecursionError:  # a nesting the bounds above did not foresee
        raise ConfigError(f"{source}: nested too deeply to read.") from None


def _yaml_problem(exc: YAMLError) -> str:
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    if problem and context and str(problem).startswith("but "):
        problem = f"{context}, {problem}"
    text = str(problem or context or exc)
    return " ".join(text.split())


class _TooMuch(ScannerError):
    """A file past one of the bounds: refused where the bound was crossed."""


def _bound(mark: Any, problem: str) -> _TooMuch:
    return _TooMuch(None, None, problem, mark)


_TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep (agents.yaml needs four)"


class _BoundedScanner(RoundTripScanner):
    """ruamel's scanner, refusing a file before it costs more than its bounds:
    every open bracket makes each later token slower (2,000 nested brackets
    take minutes), and deep block nesting overflows the composer's stack."""

    def fetch_more_tokens(self) -> Any:
        tokens, characters = self.tokens_taken + len(self.tokens), self.reader.index
        if tokens > FREE_TOKENS + characters * TOKENS_PER_3_CHARACTERS // 3:
            raise _bound(self.reader.get_mark(), _too_dense(tokens, characters))
        return super().fetch_more_tokens()

    def fetch_flow_collection_start(self, TokenClass: Any, to_push: str) -> None:
        if self.flow_level + len(self.indents) >= MAX_DEPTH:
            raise _bound(self.reader.get_mark(), _TOO_DEEP)
        super().fetch_flow_collection_start(TokenClass, to_push)

    def add_indent(self, column: int) -> bool:
        if self.indent < column and self.flow_level + len(self.indents) >= MAX_DEPTH:
            raise _bound(self.reader.get_mark(), _TOO_DEEP)
        return bool(super().add_indent(column))


def _too_dense(tokens: int, characters: int) -> str:
    return (
        f"{tokens:,} keys, values and brackets in its first {characters:,} characters, "
        "denser than any agents.yaml (two every three characters past the first "
        f"{FREE_TOKENS:,})"
    )


class _Constructor(RoundTripConstructor):
    """Values YAML reads but Python cannot make (`!!int zz`, a 5,000-digit
    number) are errors at their line, like any other YAML error."""

    def construct_non_recursive_object(self, node: Any, tag: str | None = None) -> Any:
        try:
            return super().construct_non_recursive_object(node, tag)
        except (ValueError, OverflowError, TypeError):
            value = str(getattr(node, "value", ""))
            shown = value if len(value) <= 20 else value[:20] + "…"
            problem = f"cannot read {shown!r} as {_kind(node)}"
            raise ConstructorError(None, None, problem, node.start_mark) from None


class _FastConstructor(_Constructor):
    """`_Constructor` under the C parser, which is also its loader: the same
    round-trip types, with their lines, from the nodes the C parser made
    (they carry no comments: nothing to handle)."""

    comment_handling = None


YAML_VERSION = (1, 2)
"""The YAML version the C parser's scalars are read by (`on: yes` is text)."""


@functools.cache
def _c_loader() -> Any:
    """The C parser, `_FastConstructor` and ruamel's resolver as one loader
    class, made once: `YAML(typ="rt").load` assembles it with the C parser on
    every read (a `YAML` object, its plug-ins looked for on disk, and a new
    class). A new loader of it for each read: nothing of one read is left
    for the next. With the version below, a small file's read (the tests'
    two agents, the shipped file) takes two fifths less CPU than it did, 100
    agents' a fifth less. (Made with `type`: the C parser's class is only
    known at run time.)"""

    def made(loader: Any, text: str) -> None:
        CParser.__init__(loader, text)
        loader._parser = loader._composer = loader
        _FastConstructor.__init__(loader, loader=loader)
        loader.allow_duplicate_keys = False
        VersionedResolver.__init__(loader, version=None, loadumper=loader)

    # The YAML version its scalars are resolved by, asked for each scalar:
    # ruamel's own C-parser loader finds no scanner's `%YAML` directive to go
    # by (two exceptions raised and caught to learn it, each scalar), and so
    # always resolves by its default, YAML 1.2. Given here.
    by_version = {"__init__": made, "processing_version": YAML_VERSION}
    return type("CLoader", (CParser, _FastConstructor, VersionedResolver), by_version)


def _kind(node: Any) -> str:
    tag = str(getattr(node, "tag", ""))
    kind = tag.rsplit(":", 1)[-1]
    names = {"int": "a whole number", "float": "a number"}
    return names.get(kind, f"!!{kind}" if kind else "a value")


class Plain:
    """ruamel's round-trip types as plain Python (floats as exact decimals),
    each shared (aliased) value converted once. Counts the values as the
    model would see them, aliases expanded, and refuses past what the file's
    size allows (`FREE_VALUES`, `VALUES_PER_CHARACTER`) before anything walks
    the expansion; refuses strings that cannot be stored or sent (lone
    surrogates)."""

    def __init__(self, tree: Any, source: str, characters: int) -> None:
        self._tree, self._source = tree, source
        self._characters = characters
        self._most = FREE_VALUES + characters * VALUES_PER_CHARACTER
        self._done: dict[int, tuple[Any, int]] = {}
        self._open: set[int] = set()
        self._loc: list[str] = []

    def value(self, value: Any) -> Any:
        return self._walk(value)[0]

    def _walk(self, value: Any) -> tuple[Any, int]:
        if isinstance(value, dict | list):
            return self._container(value)
        if isinstance(value, str):
            return self._text(value), 1
        if isinstance(value, float):
            return Decimal(repr(float(value))), 1
        return value, 1

    def _container(self, value: dict[Any, Any] | list[Any]) -> tuple[Any, int]:
        ident = id(value)
        if ident in self._done:
            return self._done[ident]
        if ident in self._open:
            self._fail("an alias refers to the value it is inside of")
        self._open.add(ident)
        size = 1
        plain: Any
        if isinstance(value, dict):
            plain = {}
            for key, item in value.items():
                name = self._text(str(key))
                self._loc.append(name)
                plain[name], n = self._walk(item)
                self._loc.pop()
                size += n
        else:
            plain = []
            for index, item in enumerate(value):
                self._loc.append(str(index))
                converted, n = self._walk(item)
                self._loc.pop()
                plain.append(converted)
                size += n
        if size > self._most:
            self._fail(
                f"its aliases expand it to more than {self._most:,} values, far more than "
                f"its {self._characters:,} characters write out"
            )
        self._open.discard(ident)
        self._done[ident] = (plain, size)
        return plain, size

    def _text(self, text: str) -> str:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            self._fail("a string with a lone surrogate (\\ud800–\\udfff), which is not text")
        return text

    def _fail(self, message: str) -> NoReturn:
        raise ConfigError(locate(self._tree, self._loc, self._source, message))


def locate(data: Any, loc: list[str], source: str, message: str) -> str:
    line = _line_of(data, loc)
    where = f"{source} line {line}" if line else source
    key = ".".join(loc)
    return f"{where}: {key + ': ' if key else ''}{message}."


_ABSENT = object()


def _key_named(node: dict[Any, Any], part: str) -> Any:
    """The key of `node` that `part` names: a key the YAML wrote as a number
    or null (`7:`, `~:`) is named as text (`7`, `None`) once read, and its
    line is still the one it is on."""
    if part in node:
        return part
    return next((key for key in node if not isinstance(key, str) and str(key) == part), _ABSENT)


def _line_of(data: Any, loc: list[str]) -> int | None:
    """The 1-based line of the deepest key of `loc` that the YAML has."""
    line = None
    node = data
    for part in loc:
        lc = getattr(node, "lc", None)
        if isinstance(node, dict) and (key := _key_named(node, part)) is not _ABSENT:
            if lc is not None:
                line = lc.key(key)[0] + 1
            node = node[key]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            if lc is not None:
                line = lc.item(int(part))[0] + 1
            node = node[int(part)]
        else:
            break
    return line
