"""An agent harness's frame around a tool output, kept verbatim.

Harnesses wrap what a command printed in a few lines of their own (a chunk id,
the wall time, the exit code, then `Output:`). Those lines matter (the exit
code above all) and would confuse classification, so they are split off,
the body alone is compressed, and they are put back untouched. The plane's
own `run_command` frame is one of them: `$ command` above the output,
`[exit 2 · 3.41s]` below it; its first line also says what printed the body.
"""

from __future__ import annotations

import re

from plane.economy.compress.patterns import lazy

_HEADER_LINE = lazy(
    r"(?:Chunk ID|Wall time|Process exited with code|Exit code|Original token count|Command"
    r"|Duration|Status|Process running with session ID)\b[^\n]*",
    re.I,
)
_OUTPUT_LINE = lazy(r"Output:[ \t]*", re.I)
_TRAILER = lazy(
    r"\n(?:Process exited with code -?\d+|\[exit code:? -?\d+\]"
    r"|\[(?:exit -?\d+|killed[^\]\n]*) · \d+(?:\.\d+)?s\])[ \t]*\n?\Z"
)
_PROMPT = "$ "


def split(text: str, command: str | None = None) -> tuple[str, str, str]:
    """(frame head, body, frame tail); head and tail are empty when there is no frame.

    `command`, when known, is what a `$ ` head line must say (a command of several
    lines is a head of several lines)."""
    head = _prompt(text, command) or _head(text)
    body = text[len(head) :]
    found = _TRAILER.search(body)
    if found is None or found.start() == 0:
        return head, body, ""
    return head, body[: found.start()], body[found.start() :]


def _head(text: str) -> str:
    pos = 0
    for _ in range(8):
        end = text.find("\n", pos)
        if end < 0:
            return ""
        line = text[pos:end]
        if _OUTPUT_LINE.fullmatch(line):
            return text[: end + 1] if pos > 0 else ""
        if not _HEADER_LINE.fullmatch(line):
            return ""
        pos = end + 1
    return ""


def _prompt(text: str, command: str | None) -> str:
    """The `$ command` head of the plane's run_command frame, or ""."""
    if command is not None:
        line = _PROMPT + command + "\n"
        return line if text.startswith(line) else ""
    end = text.find("\n")
    if end < 0 or not text.startswith(_PROMPT) or not _TRAILER.search(text):
        return ""
    return text[: end + 1]


def command(head: str) -> str | None:
    """The command a `$ command` head names, or None."""
    if not head.startswith(_PROMPT):
        return None
    return head[len(_PROMPT) :].removesuffix("\n") or None
