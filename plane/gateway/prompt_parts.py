"""A gateway client's request as the pieces of its prompt, in the order the
provider reads them, for cost by tool (`plane.money.attribution`).

The system prompt and the tool schemas come first (`prompt`); then each
message's text (`messages`), and each tool result (`tool`), named by the
tool the client gave: a result answers a call by its id, and the call
names the tool — Anthropic's `tool_use` / `tool_result` ids, Chat
Completions' `tool_calls` / `tool_call_id`, Responses' `call_id`. A result
whose call is not in the request is `tool` with no name.

A piece's size is its characters as the request carries them (text as
text, anything else as its JSON), which is what the share of the input
tokens is in proportion to.
"""

from __future__ import annotations

import json
from typing import Any

from plane.money.attribution import Piece

_SYSTEM_ROLES = ("system", "developer")


def pieces_of(api: str, path: str, body: dict[str, Any]) -> list[Piece]:
    """The prompt's pieces of a request to `path` of an API (`anthropic`, or
    OpenAI's Chat Completions or Responses)."""
    if api == "anthropic":
        return _messages(body)
    if path.endswith("/responses"):
        return _responses(body)
    return _chat(body)


def _size(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_size(part) for part in value)
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        return len(value["text"])
    return len(json.dumps(value, ensure_ascii=False, default=str))


def _messages(body: dict[str, Any]) -> list[Piece]:
    """Anthropic Messages: tools, system, then the messages' blocks."""
    pieces = [Piece("prompt", _size(body.get("tools")) + _size(body.get("system")))]
    names: dict[str, str] = {}
    for message in _list(body.get("messages")):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            pieces.append(Piece("messages", _size(content)))
            continue
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "tool_use":
                names[str(block.get("id"))] = str(block.get("name"))
            if kind == "tool_result":
                tool = names.get(str(block.get("tool_use_id")))
                pieces.append(Piece("tool", _size(block.get("content")), tool))
            else:
                pieces.append(Piece("messages", _size(block)))
    return pieces


def _chat(body: dict[str, Any]) -> list[Piece]:
    """Chat Completions: tools, then the messages (system ones are the prompt)."""
    pieces = [Piece("prompt", _size(body.get("tools")) + _size(body.get("functions")))]
    names: dict[str, str] = {}
    for message in _list(body.get("messages")):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        for call in _list(message.get("tool_calls")):
            if isinstance(call, dict) and isinstance(call.get("function"), dict):
                names[str(call.get("id"))] = str(call["function"].get("name"))
        if role == "tool":
            tool = names.get(str(message.get("tool_call_id")))
            pieces.append(Piece("tool", _size(message.get("content")), tool))
            continue
        size = _size(message.get("content")) + _size(message.get("tool_calls"))
        pieces.append(Piece("prompt" if role in _SYSTEM_ROLES else "messages", size))
    return pieces


def _responses(body: dict[str, Any]) -> list[Piece]:
    """Responses: instructions and tools, then the input's items."""
    pieces = [Piece("prompt", _size(body.get("instructions")) + _size(body.get("tools")))]
    given = body.get("input")
    if not isinstance(given, list):
        return [*pieces, Piece("messages", _size(given))]
    names: dict[str, str] = {}
    for item in given:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind in ("function_call", "custom_tool_call"):
            names[str(item.get("call_id"))] = str(item.get("name"))
        if kind in ("function_call_output", "custom_tool_call_output"):
            tool = names.get(str(item.get("call_id")))
            pieces.append(Piece("tool", _size(item.get("output")), tool))
        elif kind == "message" and item.get("role") in _SYSTEM_ROLES:
            pieces.append(Piece("prompt", _size(item.get("content"))))
        else:
            pieces.append(Piece("messages", _size(item.get("content", item))))
    return pieces


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
