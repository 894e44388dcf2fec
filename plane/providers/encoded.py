"""A history's messages as the provider's JSON, each encoded once.

A turn sends its agent's whole history with every call, and the history
only grows between calls: what changes is its end (the new message, the
answer, tool results), and, at a compaction or a summary, the messages from
where it was rewritten on. So each message's JSON is kept, and a call
encodes only the messages it did not send before.

What is kept is found by the messages themselves, never by an agent's name
or a count: a history is looked up by its first message, and each kept
encoding is used only for the very message it was made from, or one equal
to it (a `ChatMessage` is frozen: equal messages encode the same). A
history rewritten from its fifth message on has new objects from there, and
they are encoded anew; one read again from the store (a restart) is all new
objects, encoded anew. Nothing kept can stand for a message it was not made
from.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import orjson

from plane.providers.base import ChatMessage

KEPT_BYTES = 64 * 1024 * 1024
"""The most encoded history kept, over every history (the one sent longest
ago goes first)."""


@dataclass
class _History:
    messages: list[ChatMessage] = field(default_factory=list)
    encoded: list[bytes] = field(default_factory=list)
    joined: bytes = b""
    """`encoded`, comma-separated: a call that only adds messages adds to it."""

    @property
    def size(self) -> int:
        return len(self.joined)


class EncodedHistories:
    """The JSON of the histories a provider sends, each message encoded once.

    `encode` turns one message into its wire object; it must depend on
    nothing but the message (the same object, the same JSON)."""

    def __init__(
        self, encode: Callable[[ChatMessage], object], kept_bytes: int = KEPT_BYTES
    ) -> None:
        self._encode = encode
        self._kept: OrderedDict[int, _History] = OrderedDict()
        """By the id of a history's first message (kept alive here, so the id
        is not another's while it is kept)."""
        self._bytes = 0
        self._most = kept_bytes

    def join(self, messages: Sequence[ChatMessage]) -> bytes:
        """`messages`' wire objects, comma-separated, as `orjson.dumps` of
        the list would write them without its brackets. Raises what orjson
        raises for a message it cannot write (`orjson.JSONEncodeError`)."""
        if not messages:
            return b""
        key = id(messages[0])
        history = self._kept.pop(key, None)
        if history is not None:
            self._bytes -= history.size
        if history is None or history.messages[0] is not messages[0]:
            history = _History()
        same = _same_prefix(history.messages, messages)
        if same < len(history.messages):
            del history.messages[same:]
            del history.encoded[same:]
            history.joined = b",".join(history.encoded)
        added = []
        for message in messages[same:]:
            made = orjson.dumps(self._encode(message))
            history.messages.append(message)
            history.encoded.append(made)
            added.append(made)
        if added:
            history.joined = b",".join([history.joined, *added] if same else added)
        self._keep(key, history)
        return history.joined

    def _keep(self, key: int, history: _History) -> None:
        if history.size > self._most:
            return
        self._kept[key] = history
        self._bytes += history.size
        while self._bytes > self._most:
            self._bytes -= self._kept.popitem(last=False)[1].size

    @property
    def kept_bytes(self) -> int:
        return self._bytes


def _same_prefix(kept: list[ChatMessage], messages: Sequence[ChatMessage]) -> int:
    """How many of `messages`, from the first, are the messages kept (equal:
    the same objects, mostly, which compare at once; an equal message, being
    frozen, encodes the same)."""
    n = min(len(kept), len(messages))
    if list(messages[:n]) == kept[:n]:  # compared in C, the usual case
        return n
    for i in range(n):
        if kept[i] != messages[i]:
            return i
    return n
