"""History compaction: old, large tool results leave the model's input.

A long session piles up tool output the model has long since used; every
later turn pays for it again. Compaction replaces an old result by a short
marker with a ref (what it said stays retrievable with `retrieve`, for as
long as the compression store keeps it).

It works in batches, not turn by turn: nothing happens until the old,
large results add up to `compact_trigger_chars`, and then all of them go at
once. The provider's prompt cache breaks on that turn and stays warm on the
ones between, instead of breaking every turn as a sliding window would. The
most recent `compact_keep_last_n_turns` turns are never touched.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from plane.config import SessionConfig
from plane.economy.compress.markers import ref_for
from plane.providers.base import ChatMessage

MARK = "[old tool result compacted: "


@dataclass(frozen=True)
class Compaction:
    history: list[ChatMessage]
    removed: dict[str, str]
    """ref → the result it stands for, for the compression store."""
    saved_chars: int


def compact(history: list[ChatMessage], settings: SessionConfig) -> Compaction | None:
    """A compacted copy of `history`, or None when no batch is due."""
    if not settings.compact_enabled:
        return None
    old = _old_results(history, settings)
    if sum(len(history[i].content) for i in old) < settings.compact_trigger_chars:
        return None
    compacted, removed, saved = list(history), {}, 0
    for i in old:
        text = history[i].content
        ref = ref_for(text)
        removed[ref] = text
        compacted[i] = replace(history[i], content=_marker(text, ref))
        saved += len(text) - len(compacted[i].content)
    return Compaction(compacted, removed, saved)


def _old_results(history: list[ChatMessage], settings: SessionConfig) -> list[int]:
    """Indexes of tool results before the protected turns, large enough to
    be worth a marker and not markers already."""
    starts = [i for i, m in enumerate(history) if m.role == "user"]
    keep = settings.compact_keep_last_n_turns
    if keep == 0:
        boundary = len(history)
    elif len(starts) > keep:
        boundary = starts[-keep]
    else:
        return []
    return [
        i
        for i, m in enumerate(history[:boundary])
        if m.role == "tool" and len(m.content) > settings.compact_min_chars and not _is_marker(m)
    ]


def _marker(text: str, ref: str) -> str:
    lines = text.count("\n") + 1
    return f"{MARK}{len(text):,} chars, {lines:,} lines; retrieve ref:{ref}]"


def _is_marker(message: ChatMessage) -> bool:
    return message.content.startswith(MARK)
