"""History compaction: old, large tool results leave the model's input.

A long session piles up tool output the model has long since used; every
later turn pays for it again. Compaction replaces an old result by a short
marker with a ref (what it said stays retrievable with `retrieve`, for as
long as the compression store keeps it).

It works in batches, not turn by turn, and only when the batch pays for
itself. Taking a result out breaks the provider's prompt cache from that
result on: everything after it is sent again uncached and written to the
cache anew (1.25× the input price at Anthropic) where it would have been read
(0.1×). What it buys is the result's tokens, no longer read (0.1×) on every
later call. So a batch goes only when the old, large results add up to
`compact_trigger_chars` *and* what they save over the coming calls outweighs
that rewrite; the coming calls are reckoned as many as the protected recent
turns made (a result the batch takes out would otherwise stay at least that
long). The cache then breaks once a batch and stays warm between, instead of
breaking every turn as a sliding window would. The most recent
`compact_keep_last_n_turns` turns are never touched.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from plane.config import SessionConfig
from plane.economy.compress.markers import ref_for
from plane.providers.base import ChatMessage

MARK = "[old tool result compacted: "
READ = 0.1
"""A prompt token read from the provider's cache, against an uncached one (Anthropic's
and OpenAI's current models)."""
REWRITE = 1.25
"""A prompt token written to the cache anew (Anthropic's price; OpenAI's is 1.0, so
reckoning with this one errs on the side of not compacting)."""


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
    calls = _coming_calls(history, settings.compact_keep_last_n_turns)
    rewritten = sum(_chars(m) for m in compacted[old[0] :])
    if READ * saved * calls <= (REWRITE - READ) * rewritten:
        return None
    return Compaction(compacted, removed, saved)


def _chars(message: ChatMessage) -> int:
    return len(message.content) + sum(len(c.arguments) + len(c.name) for c in message.tool_calls)


def _coming_calls(history: list[ChatMessage], turns: int) -> int:
    """The calls the model is reckoned to make before the batch's results would have left
    the protected turns anyway: as many as the last `turns` turns made (one, at least)."""
    starts = [i for i, m in enumerate(history) if m.role == "user"]
    since = starts[-max(1, turns)] if starts else 0
    return max(1, sum(1 for m in history[since:] if m.role == "assistant"))


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
