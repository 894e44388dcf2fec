"""A gateway request as the loop guard sees it (`plane.agents.guard`): the
digest of its body less what moves between resends, the tool results it
brings (the newest: those after the last answer, each with the call that
asked for it), the text its client wrote last, and the answer before it.

A request that opens a conversation (no answer in it yet, nothing it
continues) is not a resend however often it comes: a script or a schedule
asking the same question each run (`claude -p "check the build"` every ten
minutes) starts a new session each time, which is not a loop; what it
answers is watched as any session's. A client's requests carry the whole
conversation each time, so only their newest part is new: a client calling
the same tool with the same result again brings that call and result each
time; a client resending its request sends the same digest; one that
writes `continue` and gets the same answer brings no new text and the same
answer. One reader per API, as
`plane.gateway.compress` has.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from plane.agents.guard import Seen, Step, digest, seen

VOLATILE = frozenset(
    {"metadata", "stream", "stream_options", "user", "prompt_cache_key", "service_tier"}
)
"""Body fields that may change between two sends of one request (a client's
session and user ids, how it wants the answer streamed)."""


@dataclass(frozen=True)
class Look:
    """One request's digests, taken as it arrives (before compression)."""

    request: bytes | None
    """None: it opens a conversation (`_resendable`)."""
    tools: tuple[Seen, ...] = ()
    texts: tuple[bytes, ...] = ()
    answer: str | None = None

    def step(self, cost: Decimal, at: datetime) -> Step:
        """The call, once settled at `cost`. One that opens a conversation is
        news (a new session: a stall is calls of one going nowhere)."""
        opens = self.request is None
        return Step(cost, at, self.tools, self.answer, self.request, self.texts, news=opens)


def _resendable(body: dict[str, Any], items: list[dict[str, Any]]) -> bytes | None:
    """The request's digest, when it continues a conversation (an answer or a
    tool call in `items`, or a `previous_response_id`); None when it opens one."""
    answered = any(i.get("role") == "assistant" or i.get("type") == "function_call" for i in items)
    return request_digest(body) if answered or body.get("previous_response_id") else None


def request_digest(body: dict[str, Any]) -> bytes:
    """The body less its volatile fields, keys in order: a resend's is the same."""
    kept = {key: value for key, value in body.items() if key not in VOLATILE}
    return digest("request", json.dumps(kept, sort_keys=True, ensure_ascii=False))


def _text_of(content: Any) -> str:
    """The text parts of a message's content (a string, or a list of parts)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        part["text"]
        for part in content
        if isinstance(part, dict)
        and part.get("type") in ("text", "input_text", "output_text")
        and isinstance(part.get("text"), str)
    ]
    return "\n".join(parts)


def _result_text(content: Any) -> str:
    """A tool result's content, whatever its shape, as one exact string."""
    if isinstance(content, str):
        return content
    return json.dumps(content, sort_keys=True, ensure_ascii=False)


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _written(text: str) -> tuple[bytes, ...]:
    return (digest("text", " ".join(text.split())),) if text.strip() else ()


def messages_look(body: dict[str, Any]) -> Look:
    """An Anthropic Messages request."""
    messages = [m for m in body.get("messages") or () if isinstance(m, dict)]
    request = _resendable(body, messages)
    if not messages or messages[-1].get("role") != "user":
        return Look(request)
    last = messages[-1]
    content = last.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    results = [b for b in blocks if b.get("type") == "tool_result"]
    before = messages[-2] if len(messages) > 1 else {}
    asked = before.get("content") if before.get("role") == "assistant" else None
    calls = {
        b.get("id"): (str(b.get("name", "")), _arguments(b.get("input", {})))
        for b in (asked if isinstance(asked, list) else [])
        if isinstance(b, dict) and b.get("type") == "tool_use"
    }
    tools = tuple(
        seen(*calls.get(b.get("tool_use_id"), ("", "")), _result_text(b.get("content", "")))
        for b in results
    )
    answer = None
    if not results and before.get("role") == "assistant":
        answer = _text_of(asked) or None
    texts = () if results else _written(_text_of(content))
    return Look(request, tools, texts, answer)


def chat_look(body: dict[str, Any]) -> Look:
    """An OpenAI Chat Completions request."""
    messages = [m for m in body.get("messages") or () if isinstance(m, dict)]
    request = _resendable(body, messages)
    newest: list[dict[str, Any]] = []
    while messages and messages[-1].get("role") == "tool":
        newest.insert(0, messages.pop())
    if newest:
        asked = messages[-1] if messages and messages[-1].get("role") == "assistant" else {}
        calls = {}
        for call in asked.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                named = (str(function.get("name", "")), _arguments(function.get("arguments", "")))
                calls[call.get("id")] = named
        tools = tuple(
            seen(*calls.get(m.get("tool_call_id"), ("", "")), _result_text(m.get("content", "")))
            for m in newest
        )
        return Look(request, tools)
    if not messages or messages[-1].get("role") != "user":
        return Look(request)
    texts = _written(_text_of(messages[-1].get("content")))
    before = messages[-2] if len(messages) > 1 else {}
    answer = _text_of(before.get("content")) if before.get("role") == "assistant" else ""
    return Look(request, (), texts, answer or None)


def responses_look(body: dict[str, Any]) -> Look:
    """An OpenAI Responses request (its `input` items)."""
    items = body.get("input")
    if isinstance(items, str):
        return Look(_resendable(body, []), (), _written(items))
    items = [i for i in items or () if isinstance(i, dict)]
    request = _resendable(body, items)
    newest: list[dict[str, Any]] = []
    while items and items[-1].get("type") == "function_call_output":
        newest.insert(0, items.pop())
    if newest:
        calls = {
            i.get("call_id"): (str(i.get("name", "")), _arguments(i.get("arguments", "")))
            for i in items
            if i.get("type") == "function_call"
        }
        tools = tuple(
            seen(*calls.get(i.get("call_id"), ("", "")), _result_text(i.get("output", "")))
            for i in newest
        )
        return Look(request, tools)
    if not items or items[-1].get("role") != "user":
        return Look(request)
    texts = _written(_text_of(items[-1].get("content")))
    before = items[-2] if len(items) > 1 else {}
    answer = _text_of(before.get("content")) if before.get("role") == "assistant" else ""
    return Look(request, (), texts, answer or None)


LOOKS: dict[str, Callable[[dict[str, Any]], Look]] = {
    "/v1/messages": messages_look,
    "/v1/chat/completions": chat_look,
    "/v1/responses": responses_look,
}
"""Each API's reader, by the path its clients send to."""
