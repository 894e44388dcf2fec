"""An agent harness's frame around a tool output, kept verbatim.

Harnesses wrap what a command printed in a few lines of their own (a chunk id,
the wall time, the exit code, then `Output:`). Those lines matter (the exit
code above all) and would confuse classification, so they are split off,
the body alone is compressed, and they are put back untouched. The plane's
own `run_command` frame is one of them: `$ command` above the output,
`[exit 2 · 3.41s]` below it; its first line also says what printed the body.
"""

from __future__ import annotations

from plane.economy.compress.patterns import lazy

# Lines a harness puts above the output, read case-insensitively: each starts with one of
# these words, and the word ends there (`Status: 0`, not `Statuses`). Plain string tests:
# compiling them as one case-insensitive expression cost a call 16 ms.
_HEADER_WORDS = (
    "chunk id",
    "wall time",
    "process exited with code",
    "exit code",
    "original token count",
    "command",
    "duration",
    "status",
    "process running with session id",
)
_OUTPUT = "output:"
TRAILER = lazy(
    r"\n(?:Process exited with code -?\d+|\[exit code:? -?\d+\]"
    r"|\[(?:exit -?\d+|killed[^\]\n]*) · \d+(?:\.\d+)?s\])[ \t]*\n?\Z"
)
"""What a trailer is: a harness's last line saying how the command ended (`split` looks
for it only where it can start)."""
_TRAILER_OPENINGS = ("Process exited with code", "[exit", "[killed")
_PROMPT = "$ "


def split(text: str, command: str | None = None) -> tuple[str, str, str]:
    """(frame head, body, frame tail); head and tail are empty when there is no frame.

    `command`, when known, is what a `$ ` head line must say (a command of several
    lines is a head of several lines)."""
    head = _prompt(text, command) or _head(text)
    body = text[len(head) :]
    at = _trailer(body)
    if at <= 0:
        return head, body, ""
    return head, body[:at], body[at:]


def _trailer(text: str) -> int:
    """Where the trailer starts (the newline before it), or -1. A trailer is the last line
    (a final newline aside), so only the newline before that line can start one; the
    expression is compiled only for a last line that opens like one."""
    at = text.rfind("\n", 0, len(text) - 1)
    if at < 0 or not text.startswith(_TRAILER_OPENINGS, at + 1):
        return -1
    found = TRAILER.match(text, at)
    return -1 if found is None else at


def _head(text: str) -> str:
    pos = 0
    for _ in range(8):
        end = text.find("\n", pos)
        if end < 0:
            return ""
        line = text[pos:end]
        if _is_output_line(line):
            return text[: end + 1] if pos > 0 else ""
        if not _is_header_line(line):
            return ""
        pos = end + 1
    return ""


def _is_output_line(line: str) -> bool:
    return line[: len(_OUTPUT)].lower() == _OUTPUT and not line[len(_OUTPUT) :].strip(" \t")


def _is_header_line(line: str) -> bool:
    for word in _HEADER_WORDS:
        after = line[len(word) : len(word) + 1]
        if line[: len(word)].lower() == word and not (after.isalnum() or after == "_"):
            return True
    return False


def _prompt(text: str, command: str | None) -> str:
    """The `$ command` head of the plane's run_command frame, or ""."""
    if command is not None:
        line = _PROMPT + command + "\n"
        return line if text.startswith(line) else ""
    end = text.find("\n")
    if end < 0 or not text.startswith(_PROMPT) or _trailer(text) < 0:
        return ""
    return text[: end + 1]


def command(head: str) -> str | None:
    """The command a `$ command` head names, or None."""
    if not head.startswith(_PROMPT):
        return None
    return head[len(_PROMPT) :].removesuffix("\n") or None
