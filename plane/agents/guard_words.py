"""A tool result or an answer as the loop guard compares them: its words,
without what differs each time a command is run (or an answer given) with
nothing changed — a terminal's escapes, the spacing, the time it ran at or
took — so that a repeat dressed differently is still a repeat, and a poll
whose counts moved is not."""

from __future__ import annotations

import re

ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
"""A terminal's escapes: colours, a window's title."""
TIMINGS = re.compile(
    r"(?<![\w.])(?=\d)(?:"
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"  # stamps
    r"|\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"  # the time of day, to the second
    r"|\d+\.\d+ ?(?:s|secs?|seconds|ms)\b|\d+ ?ms\b)"  # the time a run took
)
"""The time a command ran at, or took: what differs each time it is run (or
an answer given) with nothing changed. A count (tests passed, a build's
percentage, a countdown's whole seconds) is left: it is how a poll shows it
moved. Each match starts at a digit no word or number runs into, which the
engine finds first (a third of one pattern's time, tried at every character)."""
WORDS_CHARS = 64 * 1024
"""How much of a result or an answer is read as `words`; the rest is
compared as it is. A gateway's client may send a result of megabytes, and
the guard reads it on the event loop: 64 KB are a few milliseconds."""


def words(text: str) -> str:
    """A tool result or an answer as the guard compares it: its words,
    without the colours, spacing and timings that differ each time
    (`ESCAPES`, `TIMINGS`), so a command run again with nothing changed
    gives the same result, and one whose counts moved does not. Past
    `WORDS_CHARS`, the rest as it is."""
    head, rest = text[:WORDS_CHARS], text[WORDS_CHARS:]
    if "\x1b" in head:
        head = ESCAPES.sub("", head)
    said = " ".join(TIMINGS.sub("", head).split())
    return f"{said}\0{rest}" if rest else said
