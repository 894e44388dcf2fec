"""The providers' replies built by hand, event by event, for an upstream
that sends them verbatim (`ScriptedLLM.verbatim`): a usage that is not
counts, a stream cut at a chosen event."""

from __future__ import annotations

import json
from typing import Any


def sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def chat_reply(usage: dict[str, Any], model: str = "scripted-model") -> dict[str, Any]:
    """A whole Chat Completions reply, answered by `model` (as each helper's)."""
    message = {"role": "assistant", "content": "hi"}
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": usage,
    }


def chat_stream(usage: dict[str, Any], model: str = "scripted-model") -> list[bytes]:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": model}
    said = {"index": 0, "delta": {"content": "hi"}, "finish_reason": None}
    stop = {"index": 0, "delta": {}, "finish_reason": "stop"}
    return [
        sse({**chunk, "choices": [said]}),
        sse({**chunk, "choices": [stop]}),
        sse({**chunk, "choices": [], "usage": usage}),
        b"data: [DONE]\n\n",
    ]


def messages_stream(
    start: dict[str, Any], delta: dict[str, Any], model: str = "scripted-model"
) -> list[bytes]:
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start,
    }
    block = {"type": "text", "text": ""}
    text = {"type": "text_delta", "text": "hi"}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": text},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": delta},
        {"type": "message_stop"},
    ]
    return [sse(event, event["type"]) for event in events]


def chat_chunks(texts: list[str], usage: list[dict[str, Any] | None]) -> list[bytes]:
    """A Chat Completions stream of `texts`, each chunk with its `usage` (a
    server that reports it as it goes: vLLM's `continuous_usage_stats`)."""
    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "scripted-model"}
    return [
        sse({**chunk, "choices": [{"index": 0, "delta": {"content": text}}], "usage": used})
        for text, used in zip(texts, usage, strict=True)
    ]


def responses_stream(
    usage: dict[str, Any],
    items: list[dict[str, Any]] = [],  # noqa: B006
    model: str = "scripted-model",
) -> list[bytes]:
    """A Responses stream: created, its message's text, then `response.completed`
    with `usage`, the output `items` (a server tool's calls) before the message."""
    item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress"}
    text = {"type": "output_text", "text": "hi", "annotations": []}
    response: dict[str, Any] = {"id": "resp_1", "object": "response", "model": model}
    done = item | {"status": "completed", "content": [text]}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response | {"status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item | {"content": []}},
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "hi",
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {
            "type": "response.completed",
            "response": response
            | {"status": "completed", "output": [*items, done], "usage": usage},
        },
    ]
    return [sse(event | {"sequence_number": n}, event["type"]) for n, event in enumerate(events)]


def responses_reply(
    usage: dict[str, Any],
    items: list[dict[str, Any]] = [],  # noqa: B006
    model: str = "scripted-model",
) -> dict[str, Any]:
    """A whole Responses reply: the output `items` (a server tool's calls), then its text."""
    text = {"type": "output_text", "text": "hi", "annotations": []}
    message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed"}
    output = [*items, message | {"content": [text]}]
    return {
        "id": "resp_1",
        "object": "response",
        "model": model,
        "status": "completed",
        "output": output,
        "usage": usage,
    }
