"""An answer that only repeats the plane's own words is not the agent's.

A small model given a sentence of the plane's in its input (a tool refused,
its ceiling request turned down, its own system prompt) may write it back as
its answer: `You've already made this exact call in this turn; its result is
above…` read as the scout speaking, and a refusal's `…above the $5.00 it
has…` as a statement about spend. The conversation never shows the plane's
text as an agent's answer, so a turn checks its answer against what the
plane told the model in it (`echoes`) and says so instead
(`plane.agents.notices.echoed`).

Words, not characters, and runs of them: an answer that quotes a figure
from a tool result is an answer; one whose words are mostly the plane's,
in the plane's order, is an echo.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from difflib import SequenceMatcher

RUN = 3
"""Words in a row that count as repeated (fewer happen by chance: `of the`)."""
SHARE = 0.5
"""An answer is an echo when at least this share of its words are the plane's."""
FEWEST = 4
"""Answers shorter than this many words are never called echoes (`Fine.`)."""

_WORD = re.compile(r"[a-z0-9$]+(?:[.'’][a-z0-9]+)*")


def words(text: str) -> list[str]:
    """Lower-case words, contractions cut to their stem (`you've` → `you`):
    a model that repeats a sentence often changes only that."""
    return [re.split(r"['’]", w)[0] for w in _WORD.findall(text.lower())]


def echoes(answer: str, plane_said: Iterable[str]) -> bool:
    """Is `answer` mostly a repeat of one of the plane's texts?"""
    said = words(answer)
    if len(said) < FEWEST:
        return False
    for text in plane_said:
        matcher = SequenceMatcher(None, said, words(text), autojunk=False)
        repeated = sum(b.size for b in matcher.get_matching_blocks() if b.size >= RUN)
        if repeated >= SHARE * len(said):
            return True
    return False
