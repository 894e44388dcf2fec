"""Reading agents.yaml: `load_config()`, the one reader of the file, and
`parse_config()` for text. Either gives a `Config` that makes sense whole,
or raises one `ConfigError` naming the file, the line, the key and what is
wrong."""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from plane import collector
from plane.config.coherence import incoherence
from plane.config.file import Config
from plane.config.wording import expected, plainly
from plane.errors import ConfigError
from plane.yaml_reader import Plain, as_text, document, locate, read_file


def load_config(path: Path | None, looked: Sequence[Path] = ()) -> Config:
    """Read and validate agents.yaml; `None` gives the built-in defaults
    (the embedded model, no ceiling), which remember where a file was
    `looked` for. A file with nothing in it is refused: it would run every
    agent with no ceiling, which is not what its author meant, and nothing
    would say so."""
    if path is None:
        defaults = Config()
        defaults.keep_looked(tuple(place.absolute() for place in looked))
        return defaults
    config = _loaded(path)
    config.keep_file(path.resolve())
    return config


def store_of(path: Path) -> str | None:
    """agents.yaml's `store:` alone, for a command that only needs to know
    where the store is (`plane ledger`): the file's agents are neither read
    nor checked (10,000 of them took 1 to 3 s to read whole), so a problem in
    them is the plane's to refuse, not this command's. A file whose top
    level is not plain `key:` lines (flow style, several documents, a value
    left open across lines), or whose `store:` does not read alone (a bad
    URL, an alias), is read whole: its refusal is the one the file always
    gets, with its line."""
    source = str(path)
    text = as_text(read_file(path), source)
    try:
        section = _top_level_section(text, "store")
    except ValueError:  # its top level is not plain lines: read whole
        return _loaded(path).store
    try:
        return None if section is None else parse_config(section, source).store
    except ConfigError:  # its store: alone does not read: read whole, for the file's refusal
        return _loaded(path).store


_TOP_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*[ \t]*:(?=[ \t\r]|$)")


def _top_level_section(text: str, key: str) -> str | None:
    """The lines of top-level `key:` and those indented under it, at their
    own line numbers (blank lines before), None when the file has no such
    key; ValueError when its top level cannot be told from its lines alone.
    Only a file whose every unindented line is a comment or a plain `key:`
    is told, and only where no bracket or double quote is left open at an
    unindented line (a flow collection or a quoted value carried over it)."""
    if text.count("\r") != text.count("\r\n") or any(c in text for c in "\x85\u2028\u2029"):
        raise ValueError("line breaks other than \\n and \\r\\n: lines not told apart here")
    lines = text.split("\n")
    offset, starts = 0, list[int]()
    found: int | None = None
    for number, line in enumerate(lines):
        if line and line[0] not in " #\r":
            match = _TOP_KEY.match(line)
            if match is None or _left_open(text, offset):
                raise ValueError(f"line {number + 1} is not a plain key")
            if match.group().rstrip(" \t:") == key:
                if found is not None:
                    raise ValueError(f"{key} twice")  # twice: the whole read names the duplicate
                found = number
            starts.append(number)
        offset += len(line) + 1
    if found is None:
        return None
    end = next((start for start in starts if start > found), len(lines))
    return "\n" * found + "\n".join(lines[found:end])


def _left_open(text: str, offset: int) -> bool:
    """Whether a bracket or a double quote opened before `offset` is still open there."""
    return (
        text.count("{", 0, offset) != text.count("}", 0, offset)
        or text.count("[", 0, offset) != text.count("]", 0, offset)
        or text.count('"', 0, offset) % 2 == 1
    )


def _loaded(path: Path) -> Config:
    source = str(path)
    with collector.paused():  # what it builds is kept: nothing for the collector
        text = as_text(read_file(path), source)
        data = document(text, source)
        if data is None:
            raise ConfigError(
                f"{source}: the file is empty (no settings, only blank lines or comments), "
                "so it would set no ceiling; write the settings in it, or remove it to run "
                "on the built-in defaults."
            )
        return _validated(data, source, len(text))


def parse_config(text: str, source: str = "agents.yaml") -> Config:
    """A config from YAML text; empty text is the built-in defaults."""
    data = document(text, source)
    return _validated({} if data is None else data, source, len(text))


def _validated(data: Any, source: str, characters: int) -> Config:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of keys.")
    plain = Plain(data, source, characters).value(data)
    try:
        config = Config.model_validate(plain)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, data, plain, source)) from None
    if problem := incoherence(config):
        loc, message = problem
        raise ConfigError(locate(data, loc, source, message))
    config.keep_tree(data, source)
    return config


def _explain(exc: ValidationError, data: Any, plain: Any, source: str) -> str:
    """The first error in the file's words; `plain` is what was validated."""
    errors = exc.errors()
    error = errors[0]
    if error["type"] == "missing":  # a required key misspelt beside it says more: `inptu`
        block = error["loc"][:-1]
        extra = (e for e in errors if e["type"] == "extra_forbidden" and e["loc"][:-1] == block)
        error = next(extra, error)
    loc = _keys(error["loc"])
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "unknown key" + _meant(loc)
    elif error["type"] == "model_type":  # not "a valid dictionary or instance of GuardConfig"
        off = _takes_off(plain, loc)
        message = "should be a block of keys ({key: value, …})" + (", or off" if off else "")
    elif error["type"] != "value_error":  # the plane's own sentences stay as they are
        key = str(loc[-1]) if loc else ""
        message = expected(error, key, _kinds_at(loc)) or plainly(message)
    return locate(data, [str(p) for p in loc], source, message)


def _kinds_at(loc: Sequence[str | int]) -> set[type]:
    """The plain types (int, float, Decimal, str…) the value at `loc` may have."""
    kinds: list[Any] = [Config]
    for part in loc:
        kinds = [inner for kind in kinds for inner in _inside(kind, part)]
    return {one for kind in kinds for one in _alternatives(kind) if isinstance(one, type)}


def _takes_off(plain: Any, loc: Sequence[str | int]) -> bool:
    """Whether the key at `loc` may be `off` (`fallback: off`, `guard: off`):
    the file is tried with it there, so every block that can be turned off
    says so, however its key reads `off`."""
    try:
        Config.model_validate(_with(plain, loc, "off"))
    except ValidationError as exc:
        return not any(_keys(e["loc"])[: len(loc)] == list(loc) for e in exc.errors())
    except (KeyError, IndexError, TypeError):  # no such place in the file
        return False
    return True


def _with(value: Any, loc: Sequence[str | int], new: Any) -> Any:
    """`value` with `new` at `loc`, copied along the way (the rest shared)."""
    if not loc:
        return new
    inner = _with(value[loc[0]], loc[1:], new)
    if isinstance(value, dict):
        return {**value, loc[0]: inner}
    copied = list(value)
    copied[int(loc[0])] = inner
    return copied


def _keys(loc: Sequence[str | int]) -> list[str | int]:
    """`loc` as the file's keys: without the names pydantic gives the
    alternatives of a key that takes one of several (`FallbackConfig`,
    `literal['off']` under `fallback:`), which are no key of the file."""
    kinds: list[Any] = [Config]
    keys: list[str | int] = []
    for part in loc:
        tagged = [one for kind in kinds for one in _alternatives(kind) if _tag(one) == part]
        if tagged:
            kinds = tagged
            continue
        keys.append(part)
        kinds = [inner for kind in kinds for inner in _inside(kind, part)]
    return keys


def _tag(kind: Any) -> str | None:
    """The name pydantic gives `kind` as one alternative of several."""
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return kind.__name__
    if get_origin(kind) is Literal:
        return f"literal[{','.join(repr(value) for value in get_args(kind))}]"
    return None


def _meant(loc: Sequence[str | int]) -> str:
    """` (did you mean limitUsd?)`, for a key the block has one close to (its
    case aside: `limitUSD`, `limit`), else the keys it takes: `tools` under
    `defaults:` is no misspelling, and "unknown key" alone leaves the reader
    to find where it goes."""
    kinds: list[Any] = [Config]
    for part in loc[:-1]:
        kinds = [inner for kind in kinds for inner in _inside(kind, part)]
    keys = {
        (field.alias or name).lower(): field.alias or name
        for kind in kinds
        for block in _blocks(kind)
        for name, field in block.model_fields.items()
    }
    close = difflib.get_close_matches(str(loc[-1]).lower(), list(keys), n=1)
    if close:
        return f" (did you mean {keys[close[0]]}?)"
    return f" (the keys here are {', '.join(keys.values())})" if keys else ""


def _inside(kind: Any, part: str | int) -> Iterator[Any]:
    """The types a value at `part` within a value of type `kind` may have."""
    for one in _alternatives(kind):
        if get_origin(one) in (dict, list):  # an agent's name, an item's index
            yield get_args(one)[-1]
        for block in _blocks(one):
            for name, field in block.model_fields.items():
                if part in (name, field.alias):
                    yield field.annotation


def _alternatives(kind: Any) -> Iterator[Any]:
    """The types a value of type `kind` may have: each of a union's, an annotated one's."""
    origin = get_origin(kind)
    if origin is Annotated:
        yield from _alternatives(get_args(kind)[0])
    elif origin in (Union, types.UnionType):
        for alternative in get_args(kind):
            yield from _alternatives(alternative)
    else:
        yield kind


def _blocks(kind: Any) -> Iterator[type[BaseModel]]:
    """The blocks of keys (models) a value of type `kind` may be."""
    for one in _alternatives(kind):
        if isinstance(one, type) and issubclass(one, BaseModel):
            yield one
