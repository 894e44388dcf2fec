"""retrieve: get back what a marker stands for, whole or the part that is needed.

The model sees `[… 412 log lines omitted ref:k_…]` and asks for it back —
often only part of it: some lines, a character range, one value of a JSON
chunk, or the lines matching a pattern. Each mode is one argument; a bad one
is refused with one sentence saying what is wrong, never guessed at.
"""

from __future__ import annotations

import json
import re
from typing import Protocol

from plane.errors import ToolError
from plane.tools.matching import MAX_LINES, matching

MAX_GREP_LINES = MAX_LINES


class Lookup(Protocol):
    def get(self, ref: str) -> str: ...


def retrieve(
    store: Lookup,
    ref: str,
    *,
    lines: str | None = None,
    chars: str | None = None,
    pointer: str | None = None,
    grep: str | None = None,
) -> str:
    """The chunk behind `ref`, or the part of it one of the modes selects."""
    chosen = [
        name
        for name, value in (
            ("lines", lines),
            ("chars", chars),
            ("pointer", pointer),
            ("grep", grep),
        )
        if value is not None
    ]
    if len(chosen) > 1:
        raise ToolError(f"Choose one of lines, chars, pointer or grep, not {' and '.join(chosen)}.")
    content = store.get(ref.strip())
    if lines is not None:
        return by_lines(content, lines)
    if chars is not None:
        start, end = parse_range(chars, len(content), "chars")
        return content[start:end]
    if pointer is not None:
        return by_pointer(content, pointer)
    if grep is not None:
        return by_grep(content, grep)
    return content


def parse_range(spec: str, size: int, what: str) -> tuple[int, int]:
    """`A:B` (1-based, inclusive, either side may be empty) as a 0-based half-open slice."""
    # ASCII digits: `\d` would read `١:٢` (Arabic-Indic digits) as lines 1 to 2.
    found = re.fullmatch(r"\s*([0-9]*)\s*:\s*([0-9]*)\s*", spec or "")
    if found is None:
        raise ToolError(f"{what} must look like A:B (for example 10:20), not {spec!r}.")
    first = int(found.group(1)) if found.group(1) else 1
    last = int(found.group(2)) if found.group(2) else size
    if first < 1 or last < first:
        raise ToolError(f"{what} {spec!r} is empty: A must be at least 1 and B at least A.")
    if first > size:
        raise ToolError(f"{what} {spec!r} starts after the end: the chunk has {size} {what}.")
    return first - 1, min(last, size)


def by_lines(content: str, spec: str) -> str:
    rows = content.split("\n")
    start, end = parse_range(spec, len(rows), "lines")
    return "\n".join(rows[start:end])


def by_pointer(content: str, pointer: str) -> str:
    """An RFC 6901 JSON pointer into a chunk that is JSON, or a run of a JSON document's
    items (what a marker in a long array or object stands for), read as the array or
    object of those items, or JSON Lines, read as the array of its lines."""
    value = _as_json(content)
    if pointer and not pointer.startswith("/"):
        raise ToolError(f"A JSON pointer starts with '/' (or is empty for all): {pointer!r}.")
    for raw in pointer.split("/")[1:] if pointer else []:
        token = raw.replace("~1", "/").replace("~0", "~")
        value = _step(value, token, pointer)
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False)


def _as_json(content: str) -> object:
    body = content.strip().rstrip(",")
    # RecursionError: nested deeper than Python reads, which the model can do nothing about.
    for text in (content, f"[{body}]", f"{{{body}}}"):
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            pass
    try:
        return [json.loads(line) for line in content.splitlines() if line.strip()]
    except (ValueError, RecursionError):
        raise ToolError("This chunk is not JSON on its own; use lines, chars or grep.") from None


def _step(value: object, token: str, pointer: str) -> object:
    if isinstance(value, dict):
        if token not in value:
            raise ToolError(f"No key {token!r} at that point of {pointer!r}.")
        return value[token]
    if isinstance(value, list):
        if not re.fullmatch(r"0|[1-9]\d*", token) or int(token) >= len(value):
            raise ToolError(
                f"{token!r} is not an index of the {len(value)}-item array in {pointer!r}."
            )
        return value[int(token)]
    raise ToolError(f"{pointer!r} goes below a value that is neither an object nor an array.")


def by_grep(content: str, pattern: str) -> str:
    """Lines matching a regular expression, each with its 1-based line number."""
    try:
        re.compile(pattern)
    except re.error as err:
        raise ToolError(
            f"The pattern {pattern!r} is not a valid regular expression: {err}."
        ) from None
    return matching(content, pattern)
