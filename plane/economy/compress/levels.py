"""Which lines report an error or a warning: what labels count and the guard protects.

Shared by `plan` (a marker's label counts the errors and warnings it hides)
and `salience` (the guard keeps the names on error lines), so neither has to
import the other.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate

from plane.economy.compress.patterns import lazy

ERROR_LINE_RE = lazy(
    r"error|fail|warning|exception|traceback|fatal|denied|not found|undefined"
    r"|no such file or directory",
    re.I,
)
KEYWORDS = (
    "error",
    "fail",
    "warning",
    "exception",
    "traceback",
    "fatal",
    "denied",
    "not found",
    "undefined",
    "no such file or directory",
)


def is_error_line(line: str) -> bool:
    return ERROR_LINE_RE.search(line) is not None


_AND_NEWLINE = (1).__add__  # a line's length and its newline's, counted without a Python loop


def error_lines(lines: list[str], words: tuple[str, ...] = KEYWORDS) -> list[bool]:
    """Which lines mention an error or a warning, found with a few fast scans of the text."""
    flags = [False] * len(lines)
    low = "\n".join(lines).lower()
    starts = list(accumulate(map(_AND_NEWLINE, map(len, lines)), initial=0))
    for word in words:
        pos = low.find(word)
        while pos >= 0:
            n = bisect_right(starts, pos) - 1
            flags[n] = True
            pos = low.find(word, starts[n + 1])
    return flags


# What a label counts: a line that reports an error or a warning, not every line that
# mentions one (`test_broken_pipe_error ... ok`, `libgpg-error-dev` are neither). A file
# that is not there (`No such file or directory`, `command not found`, `x: not found`) is
# an error: the command did not do what it was asked.
_REPORTS_ERROR = lazy(
    r"(?i:(?<!\w)(?:errors?|fail(?:ed|ure|s)?|fatal|exception|traceback|denied"
    r"|panic(?:ked)?|no such file or directory|not found)(?!\w|-\w))"
    r"|[a-z](?:Error|Exception)\b|^E {2,}\S"
)
_REPORTS_WARNING = lazy(r"(?i:(?<!\w)warn(?:ing|ings|s)?(?!\w|-\w))|[a-z]Warning\b")
_PASSED = lazy(r"(?:\.\.\. ok|\bPASSED|\bpassed|\bok)\s*$")
_LEVEL_WORDS = (
    "error",
    "fail",
    "fatal",
    "exception",
    "traceback",
    "denied",
    "panic",
    "warn",
    "no such file",
    "not found",
)


def reports_level(line: str) -> bool:
    """Whether this line reports an error or a warning (not only mentions one)."""
    if _PASSED.search(line):
        return False
    return bool(_REPORTS_ERROR.search(line) or _REPORTS_WARNING.search(line))


def count_levels(lines: list[str]) -> tuple[int, int]:
    """How many of these lines report an error, and how many (other) a warning."""
    text = "\n".join(lines)
    low = text.lower()
    if not any(word in low for word in _LEVEL_WORDS) and not (
        text.startswith("E ") or "\nE " in text
    ):
        return 0, 0  # most folds (a label is counted for each): no line to look at
    mentions = error_lines(lines, _LEVEL_WORDS)  # a fast pass; the patterns judge the few
    errors = warnings = 0
    for line, mentioned in zip(lines, mentions, strict=True):
        if not (mentioned or line.startswith("E ")) or _PASSED.search(line):
            continue
        if _REPORTS_ERROR.search(line):
            errors += 1
        elif _REPORTS_WARNING.search(line):
            warnings += 1
    return errors, warnings
