"""Tool calling for models that cannot call tools (`tool_mode: json_schema`).

The small embedded model never emits native tool calls, but with a JSON
schema forced through `response_format` (llama.cpp turns it into a grammar)
it reliably writes one of:

    {"tool": "<name>", "arguments": {...}}      one object per tool
    {"answer": "..."}                           the final answer

This module builds that schema, tells the model about the tools in the tail
of the system prompt (stable text, so the prompt cache keeps it), renders
earlier tool calls and results in the same JSON form the model writes, and
parses the reply back into the ordinary `Completion` shape.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from plane.providers.base import ChatMessage, ToolCall, ToolSpec


def response_format(tools: tuple[ToolSpec, ...]) -> dict[str, Any]:
    choices: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "tool": {"type": "string", "enum": [tool.name]},
                "arguments": tool.parameters or {"type": "object"},
            },
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    choices.append(
        {
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
            "additionalProperties": False,
        }
    )
    return {
        "type": "json_schema",
        "json_schema": {"name": "tool_call_or_answer", "schema": {"anyOf": choices}},
    }


def system_prompt(system: str, tools: tuple[ToolSpec, ...]) -> str:
    lines = [
        "You can use these tools:",
        *(f"- {t.name}: {t.description} Arguments: {json.dumps(t.parameters)}" for t in tools),
        'Reply with one JSON object: {"tool": "<name>", "arguments": {...}} to use a '
        'tool, or {"answer": "<text>"} to answer.',
    ]
    tail = "\n".join(lines)
    return f"{system}\n\n{tail}" if system else tail


def render(messages: tuple[ChatMessage, ...]) -> list[dict[str, Any]]:
    """OpenAI-style messages with tool calls and results as plain text."""
    names = {c.id: c.name for m in messages for c in m.tool_calls}
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            parts = [_call_text(call) for call in message.tool_calls]
            if message.content or not parts:
                parts.insert(0, json.dumps({"answer": message.content}))
            out.append({"role": "assistant", "content": "\n".join(parts)})
        elif message.role == "tool":
            name = names.get(message.tool_call_id or "", "the tool")
            out.append({"role": "user", "content": f"Result of {name}:\n{message.content}"})
        else:
            out.append({"role": message.role, "content": message.content})
    return out


def _call_text(call: ToolCall) -> str:
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        arguments = call.arguments
    return json.dumps({"tool": call.name, "arguments": arguments})


def parse(text: str, tools: tuple[ToolSpec, ...]) -> tuple[str, tuple[ToolCall, ...]]:
    """(answer text, tool calls) from what the model wrote. Text that is not
    one of the schema's objects (a reply cut off by max tokens, say) comes
    back as the answer, as written: it was paid for."""
    try:
        data = json.loads(text)
    except ValueError:
        return text, ()
    if not isinstance(data, dict):
        return text, ()
    known = {tool.name for tool in tools}
    if data.get("tool") in known and isinstance(data.get("arguments"), dict):
        arguments = json.dumps(data["arguments"])
        call_id = "call_" + secrets.token_hex(6)  # never rendered into the prompt
        return "", (ToolCall(id=call_id, name=data["tool"], arguments=arguments),)
    if isinstance(data.get("answer"), str):
        return data["answer"], ()
    return text, ()
