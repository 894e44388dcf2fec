"""Compression inside a gateway agent's requests (`gateway: {compress: true}`).

Only tool results pass through the engine — Anthropic `tool_result` blocks,
OpenAI `tool` messages and Responses `function_call_output` items — never
system, user or assistant text, and never a block that carries a
`cache_control` breakpoint (nor a tool result that holds one): what the
client marked for its prompt cache reaches the provider exactly as sent.
The engine is deterministic (no clock, no randomness, no set order), so the
same request gives the same bytes every time and the client's cached prefix
stays warm across requests.

What compression left out is kept in the plane's ref store, as for the
plane's own agents, and is reached with `plane retrieve REF` (or `plane
expand`). The gateway does not offer the model a `retrieve` tool of its own:
answering a tool call inside a stream the client is already reading would
mean holding back or rewriting the model's reply, and a call the client's
own loop cannot see breaks clients that check tool ids against their
history (Claude Code does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plane.economy.compress.engine import compress

Keep = Callable[[dict[str, str]], None]
"""Where what was left out goes (the ref store)."""


class _Pass:
    def __init__(self, keep: Keep) -> None:
        self.keep = keep
        self.saved = 0

    def text(self, text: str) -> str:
        result = compress(text)
        if result.refs:
            self.keep(result.refs)
        self.saved += max(0, result.saved)
        return result.text

    def parts(self, content: Any) -> Any:
        """A string, or a list of parts whose unmarked text parts are compressed."""
        if isinstance(content, str):
            return self.text(content)
        if not isinstance(content, list) or _marked(content):
            return content
        done = self.text
        return [{**part, "text": done(part["text"])} if _text(part) else part for part in content]


def _text(part: Any) -> bool:
    is_text = isinstance(part, dict) and part.get("type") == "text"
    return is_text and isinstance(part.get("text"), str)


def _marked(value: Any) -> bool:
    """Whether a cache breakpoint sits anywhere in `value`."""
    if isinstance(value, dict):
        return "cache_control" in value or any(_marked(v) for v in value.values())
    if isinstance(value, list):
        return any(_marked(v) for v in value)
    return False


def compress_messages(body: dict[str, Any], keep: Keep) -> tuple[dict[str, Any], int]:
    """The Anthropic request with its tool results compressed; the chars saved."""
    work = _Pass(keep)
    messages = body.get("messages")
    if not isinstance(messages, list):
        return body, 0
    out = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list) or message.get("role") != "user":
            out.append(message)
            continue
        blocks = [
            {**block, "content": work.parts(block.get("content"))}
            if isinstance(block, dict) and block.get("type") == "tool_result" and not _marked(block)
            else block
            for block in content
        ]
        out.append({**message, "content": blocks})
    return {**body, "messages": out}, work.saved


def compress_chat(body: dict[str, Any], keep: Keep) -> tuple[dict[str, Any], int]:
    """The Chat Completions request with its tool messages compressed; the chars saved."""
    work = _Pass(keep)
    messages = body.get("messages")
    if not isinstance(messages, list):
        return body, 0
    out = [
        {**m, "content": work.parts(m.get("content"))}
        if isinstance(m, dict) and m.get("role") == "tool" and not _marked(m)
        else m
        for m in messages
    ]
    return {**body, "messages": out}, work.saved


def compress_responses(body: dict[str, Any], keep: Keep) -> tuple[dict[str, Any], int]:
    """The Responses request with its `function_call_output` items compressed."""
    work = _Pass(keep)
    items = body.get("input")
    if not isinstance(items, list):
        return body, 0
    out = [
        {**item, "output": work.parts(item.get("output"))}
        if isinstance(item, dict)
        and item.get("type") == "function_call_output"
        and not _marked(item)
        else item
        for item in items
    ]
    return {**body, "input": out}, work.saved
