"""What can happen to an agent's history between two calls, for the
property tests of what is kept across calls (the encoded JSON, the folded
figures): it grows, is rewritten from a message on (a compaction), is read
again as new objects (a restart), or is cut short."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from plane.providers.base import ChatMessage


def edits(messages: st.SearchStrategy[ChatMessage]) -> st.SearchStrategy[tuple[str, int, Any]]:
    """(kind, where, message) for `edited`."""
    kinds = st.sampled_from(["add", "rewrite", "reload", "cut"])
    return st.tuples(kinds, st.integers(0, 30), messages)


def edited(
    history: list[ChatMessage], kind: str, at: int, message: ChatMessage
) -> list[ChatMessage]:
    """`history` after one edit; a new list where the edit makes one."""
    if kind == "add":
        history.append(message)
    elif kind == "rewrite" and history:
        history[at % len(history)] = message
    elif kind == "reload":
        history = [ChatMessage(**m.__dict__) for m in history]
    elif kind == "cut":
        history = history[: at % (len(history) + 1)]
    return history
