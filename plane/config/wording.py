"""What a key of agents.yaml expects, said in the plane's words: a value of
the wrong kind or out of range is answered with the kind of value the key
takes and what the file wrote (`a dollar amount of 0 or more, like 5 or
0.50; got -1`), never with the validator's own phrases ("Input should
be…"), which name Python's types and leave the reader to guess."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

DOLLARS = "a dollar amount"
WHOLE = "a whole number"
NUMBER = "a number"
MONEY_EXAMPLE = "like 5 or 0.50"

LISTS = {
    "agents": "a list of agent names, like [scout, poet]",
    "tools": "a list of tool names, like [read_file, run_command]",
    "on": "a list of moments, like [held, spike]",
    "models": "a list of model names, like [gpt-5, gpt-5-mini]",
    "args": "a list of arguments, like [--verbose, serve]",
    "read": "a list of absolute directories, like [/opt/tools]",
}
"""What each list of the file holds, by its key, with an example."""


def shown(value: Any) -> str:
    """What the file wrote, as YAML would show it, cut short: `"scout"`,
    `-1`, `true`, `[a, b]`; a value too long to quote is said by its kind."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float | Decimal) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else ("-.inf" if value < 0 else ".inf")
    if isinstance(value, str):
        return f'"{value}"' if len(value) <= 40 else f"a text of {len(value):,} characters"
    if isinstance(value, list):
        text = "[" + ", ".join(shown(item) for item in value) + "]"
        return text if len(text) <= 40 else f"a list of {len(value):,}"
    if isinstance(value, dict):
        return "a block of keys"
    text = f"{value:f}" if isinstance(value, Decimal) else str(value)
    return text if len(text) <= 40 else text[:20] + "…"


def figure(bound: Any) -> str:
    """A bound as a person writes it: 1,000,000, 0.5, 1 (never 1.0)."""
    if isinstance(bound, float) and bound.is_integer():
        bound = int(bound)
    if isinstance(bound, int):
        return f"{bound:,}"
    if isinstance(bound, Decimal):
        return f"{bound:,f}" if bound == bound.to_integral_value() else str(bound)
    return str(bound)


BOUNDS: Mapping[str, Callable[[Any], str]] = {
    "greater_than_equal": lambda ctx: f"of {figure(ctx['ge'])} or more",
    "greater_than": lambda ctx: f"above {figure(ctx['gt'])}",
    "less_than_equal": lambda ctx: f"of at most {figure(ctx['le'])}",
    "less_than": lambda ctx: f"below {figure(ctx['lt'])}",
}


def noun_of(kinds: set[type]) -> str:
    """The kind of number a key takes, from its types."""
    if Decimal in kinds:
        return DOLLARS
    if int in kinds and float not in kinds:
        return WHOLE
    return NUMBER


def with_example(noun: str) -> str:
    """The noun, with an example when it is dollars (which take cents)."""
    return f"{noun}, {MONEY_EXAMPLE}" if noun.endswith("dollar amount") else noun


def counted(number: Any, word: str) -> str:
    """`1 entry`, `3 entries`, `1 character`, `4,096 characters`."""
    if number == 1:
        return f"1 {word}"
    return f"{figure(number)} {word[:-1] + 'ies' if word.endswith('y') else word + 's'}"


def choices(expected: str) -> list[str]:
    """The values a key of a few allowed ones takes, from the validator's
    `'a', 'b' or 'c'`."""
    return re.findall(r"'([^']*)'", expected)


def nearest(got: str, values: list[str]) -> list[str]:
    """The allowed value `got` is the start of (`openai`: openai-compatible),
    else the closest in spelling, if any is close."""
    started = [value for value in values if got and value.lower().startswith(got.lower())]
    return started[:1] or difflib.get_close_matches(got.lower(), values, n=1, cutoff=0.7)


def one_of(values: list[str], got: Any) -> str:
    """`one of native or json_schema; got "x"`, with the closest one."""
    listed = ", ".join(values[:-1]) + f" or {values[-1]}" if len(values) > 1 else values[0]
    close = nearest(got, values) if isinstance(got, str) else []
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"one of {listed}; got {shown(got)}{hint}"


def bounded(error: Mapping[str, Any], kinds: set[type]) -> str:
    """A number out of its range: `a whole number of 1 or more; got 0`."""
    noun = noun_of(kinds)
    example = f", {MONEY_EXAMPLE}" if noun == DOLLARS else ""
    return f"{noun} {BOUNDS[error['type']](error['ctx'])}{example}; got {shown(error['input'])}"


def not_a_number(error: Mapping[str, Any], kinds: set[type]) -> str:
    """Not a number at all, or not a finite one, or one with too many decimals."""
    kind, got = error["type"], shown(error["input"])
    if kind.startswith("int_"):
        return f"{WHOLE}; got {got}"
    if kind == "finite_number":
        return f"{with_example('a finite ' + noun_of(kinds).removeprefix('a '))}; got {got}"
    if kind == "decimal_max_places":
        places = (error.get("ctx") or {}).get("decimal_places", 6)
        return f"{DOLLARS} with at most {places} decimals; got {got}"
    return f"{with_example(noun_of(kinds))}; got {got}"


def sized(error: Mapping[str, Any]) -> str:
    """A list, a block or a text too long or too short."""
    kind, ctx = error["type"], error.get("ctx") or {}
    most = "at most" if kind.endswith("too_long") else "at least"
    bound = ctx.get("max_length" if kind.endswith("too_long") else "min_length")
    if kind.startswith("string_"):
        return f"text of {most} {counted(bound, 'character')}; got {shown(error['input'])}"
    got = error["input"]
    length = ctx.get("actual_length") or (len(got) if isinstance(got, list | dict) else None)
    if length is None:
        return f"{most} {counted(bound, 'entry')}"
    return f"{most} {counted(bound, 'entry')}; got {figure(length) if length else 'none'}"


def mistyped(error: Mapping[str, Any], key: str) -> str | None:
    """A value of the wrong kind: not true or false, not text, not a list…"""
    kind, got = error["type"], error["input"]
    if kind in ("bool_type", "bool_parsing"):
        return f"true or false; got {shown(got)}"
    if kind == "string_type":
        quote = f' (write "{shown(got)}" for the text)' if isinstance(got, int | float) else ""
        return f"text; got {shown(got)}{quote}"
    if kind == "list_type":
        return f"{LISTS.get(key, 'a list, like [a, b]')}; got {shown(got)}"
    if kind == "dict_type":
        return f"a block of keys ({{key: value, …}}); got {shown(got)}"
    if kind == "path_type":
        return f"a path, like /srv/work; got {shown(got)}"
    if kind == "literal_error":
        return one_of(choices((error.get("ctx") or {}).get("expected", "")), got)
    return None


NUMBERS = {"int_type", "int_parsing", "int_from_float", "int_parsing_size", "float_type"}
NUMBERS |= {"float_parsing", "decimal_type", "decimal_parsing", "finite_number"}
NUMBERS |= {"decimal_max_places"}
SIZES = {"too_long", "too_short", "string_too_long", "string_too_short"}


def expected(error: Mapping[str, Any], key: str, kinds: set[type]) -> str | None:
    """The sentence for one validation error of a value: what the key takes,
    and what the file gave; None for an error this does not word (the
    plane's own sentences, the blocks of keys, a key unknown)."""
    kind = error["type"]
    if kind in BOUNDS:
        return bounded(error, kinds)
    if kind in NUMBERS:
        return not_a_number(error, kinds)
    if kind in SIZES:
        return sized(error)
    if kind == "missing":
        return "missing; this block needs it"
    return mistyped(error, key)


def plainly(message: str) -> str:
    """A validator's sentence this module does not word, without its
    "Input should be" (`should be …`)."""
    return re.sub(r"^(Decimal )?[Ii]nput should", "should", message)
