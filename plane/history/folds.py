"""A figure worked out over a history, message by message, kept for the
history's next call.

Each call sends its agent's whole history, and between two calls it only
grows at its end: what a call works out over every message (its estimate's
characters, its pieces for cost by tool) is the last call's figure carried
over the messages added since. A history rewritten (compaction, a summary)
or read again from the store (a restart) is not the one kept, and is worked
out anew from its first message.

What is kept is found by the messages themselves: a history by its first
message, and it is used only when the messages kept are, one for one, the
new history's first ones (equal: a `ChatMessage` is frozen, so equal
messages give the same figure; the same objects are compared at once).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from plane.providers.base import ChatMessage

S = TypeVar("S")

KEPT_CHARS = 32_000_000
"""The most history text kept alive here, over every history (the one used
longest ago goes first), as the transcript keeps in memory at most: a
history the transcript let go of is not held here past this either."""


class Folds(Generic[S]):
    """`step` folded over a history from `start`, kept between calls."""

    def __init__(
        self, start: S, step: Callable[[S, ChatMessage], S], most: int = KEPT_CHARS
    ) -> None:
        self._start, self._step, self._most = start, step, most
        self._kept: OrderedDict[int, tuple[tuple[ChatMessage, ...], S, int]] = OrderedDict()
        """By the id of a history's first message (kept alive here, so the id
        is not another's while it is kept): its messages, their figure and
        their characters."""
        self._chars = 0

    def fold(self, messages: Sequence[ChatMessage]) -> S:
        """`step` over `messages`, from `start`; only over those added since
        the same history's last fold."""
        history = tuple(messages)
        if not history:
            return self._start
        key = id(history[0])
        kept = self._kept.pop(key, None)
        state, done, chars = self._start, 0, 0
        if kept is not None:
            self._chars -= kept[2]
            seen = len(kept[0])
            if seen <= len(history) and history[:seen] == kept[0]:
                state, done, chars = kept[1], seen, kept[2]
        step = self._step
        for message in history[done:]:
            state = step(state, message)
            chars += _chars(message)
        if chars <= self._most:
            self._kept[key] = (history, state, chars)
            self._chars += chars
            while self._chars > self._most:
                self._chars -= self._kept.popitem(last=False)[1][2]
        return state

    @property
    def kept_chars(self) -> int:
        return self._chars


def _chars(message: ChatMessage) -> int:
    return len(message.content) + sum(len(c.arguments) for c in message.tool_calls) + 1
