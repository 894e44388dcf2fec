"""Anthropic's Messages API, natively, with prompt-cache breakpoints.

Usage: Anthropic's `input_tokens` counts only the uncached part of the prompt;
`cache_read_input_tokens` and `cache_creation_input_tokens` come on top. The
plane's `Usage.input_tokens` is the sum of all three.

Caching is explicit here: the system prompt (and with it the tools, which
precede it in Anthropic's cache order) always carries a `cache_control`
breakpoint, and so does each message at `request.cache_breakpoints` (the last
three: Anthropic allows four in all).

Streaming follows Anthropic's event sequence: `message_start` (the input
usage), content blocks, `message_delta` (the output usage), `message_stop`.
A stream without its `message_delta` is charged from the input usage it
did report plus an estimate of the output, marked estimated.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from plane.providers.base import ChatMessage, Completion, CompletionRequest, OnText, ToolCall
from plane.providers.connections import Connect
from plane.providers.http import (
    Events,
    HttpCaller,
    RetryPolicy,
    drain,
    estimate_tokens,
    estimate_usage,
    token_count,
)
from plane.wire.protocol import Usage

API_VERSION = "2023-06-01"
DEFAULT_BASE_URL = "https://api.anthropic.com"
EPHEMERAL = {"type": "ephemeral"}
MAX_MESSAGE_BREAKPOINTS = 3


def anthropic_usage(usage: dict[str, Any]) -> Usage:
    """The plane's `Usage` from an Anthropic `usage` object."""
    fresh = token_count(usage.get("input_tokens"))
    read = token_count(usage.get("cache_read_input_tokens"))
    written = token_count(usage.get("cache_creation_input_tokens"))
    return Usage(
        input_tokens=fresh + read + written,
        cache_read_tokens=read,
        cache_write_tokens=written,
        cache_write_1h_tokens=hour_writes(usage, written),
        output_tokens=token_count(usage.get("output_tokens")),
    )


def cumulative_usage(start: dict[str, Any], final: dict[str, Any]) -> Usage:
    """A stream's usage from `message_start`'s and `message_delta`'s objects.
    Anthropic's counts are cumulative: the later may repeat the earlier's or
    add to them, and one it says lower (a server speaking the API that says
    0 for the prompt at the end) never takes back what was announced."""
    first, last = anthropic_usage(start), anthropic_usage(start | final)
    read = max(first.cache_read_tokens, last.cache_read_tokens)
    written = max(first.cache_write_tokens, last.cache_write_tokens)
    fresh = max(_uncached(first), _uncached(last))
    return Usage(
        input_tokens=fresh + read + written,
        cache_read_tokens=read,
        cache_write_tokens=written,
        cache_write_1h_tokens=min(
            max(first.cache_write_1h_tokens, last.cache_write_1h_tokens), written
        ),
        output_tokens=max(first.output_tokens, last.output_tokens),
    )


def _uncached(usage: Usage) -> int:
    return usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens


def hour_writes(usage: dict[str, Any], written: int) -> int:
    """The part of `written` kept for an hour: `cache_creation`'s
    `ephemeral_1h_input_tokens` (never more than was written)."""
    split = usage.get("cache_creation")
    hour = token_count(split.get("ephemeral_1h_input_tokens")) if isinstance(split, dict) else 0
    return min(hour, written)


def wire_messages(request: CompletionRequest) -> list[dict[str, Any]]:
    """Anthropic messages: tool results go in user turns, consecutive turns of
    one role are merged, and the breakpoints are marked."""
    wire: list[dict[str, Any]] = []
    last_block: dict[int, dict[str, Any]] = {}
    for index, message in enumerate(request.messages):
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
        last_block[index] = blocks[-1]
    marked = [i for i in request.cache_breakpoints if i in last_block]
    for index in marked[-MAX_MESSAGE_BREAKPOINTS:]:
        last_block[index]["cache_control"] = dict(EPHEMERAL)
    return wire


def _blocks(message: ChatMessage) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content}
        ]
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call)})
    return blocks


def _input(call: ToolCall) -> dict[str, Any]:
    try:
        value = json.loads(call.arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass
class _Stream:
    """What a stream has said so far."""

    model: str
    text: list[str] = field(default_factory=list)
    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    start_usage: dict[str, Any] | None = None
    final_usage: dict[str, Any] | None = None
    stop_reason: str = ""

    @property
    def output_chars(self) -> int:
        args = sum(len("".join(b["args"])) + len(b["name"]) for b in self.blocks.values())
        return len("".join(self.text)) + args

    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(
            ToolCall(id=b["id"], name=b["name"], arguments="".join(b["args"]) or "{}")
            for _, b in sorted(self.blocks.items())
            if b["done"]
        )

    def usage(self, request: CompletionRequest) -> tuple[Usage, bool]:
        """The call's usage, and whether any of it is estimated."""
        if self.start_usage is not None and self.final_usage is not None:
            return cumulative_usage(self.start_usage, self.final_usage), False
        output = estimate_tokens(self.output_chars)
        if self.start_usage is not None:
            return anthropic_usage(self.start_usage | {"output_tokens": output}), True
        if self.final_usage is not None and not self.final_usage.keys() - {"output_tokens"}:
            # No message_start (llama.cpp leaves it out when the answer opens
            # with part of a character): the input is estimated, the output
            # is the count message_delta did give.
            guessed = {"input_tokens": estimate_usage(request).input_tokens}
            return anthropic_usage(guessed | self.final_usage), True
        return estimate_usage(request, self.output_chars), True

    def feed(self, kind: str, event: dict[str, Any]) -> str:
        """One event into the state; the text it carries. Raises KeyError,
        TypeError or ValueError on an event of the wrong shape."""
        handler = getattr(self, f"_on_{kind}", None)
        piece = handler(event) if handler else ""
        if not isinstance(piece, str):
            raise TypeError("text is not text")
        return piece

    def _on_message_start(self, event: dict[str, Any]) -> str:
        message = event["message"]
        self.model = str(message.get("model") or self.model)
        self.start_usage = dict(message.get("usage") or {})
        anthropic_usage(self.start_usage)  # unreadable counts fail here, not later
        return ""

    def _on_content_block_start(self, event: dict[str, Any]) -> str:
        block = event["content_block"]
        if block["type"] == "tool_use":
            self.blocks[int(event["index"])] = {
                "id": str(block["id"]),
                "name": str(block["name"]),
                "args": [],
                "done": False,
            }
        return (block.get("text") or "") if block["type"] == "text" else ""

    def _on_content_block_delta(self, event: dict[str, Any]) -> str:
        delta = event["delta"]
        if delta["type"] == "input_json_delta":
            self.blocks[int(event["index"])]["args"].append(delta["partial_json"])
        return delta["text"] if delta["type"] == "text_delta" else ""

    def _on_content_block_stop(self, event: dict[str, Any]) -> str:
        if (block := self.blocks.get(int(event["index"]))) is not None:
            block["done"] = True
        return ""

    def _on_message_delta(self, event: dict[str, Any]) -> str:
        self.stop_reason = str((event.get("delta") or {}).get("stop_reason") or "")
        self.final_usage = dict(event.get("usage") or {})
        anthropic_usage((self.start_usage or {}) | self.final_usage)
        return ""


class AnthropicProvider:
    """A `Provider` for the Anthropic Messages API (or a server speaking it)."""

    def __init__(
        self,
        name: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        key_env: str | None = None,
        timeout_s: float = 120,
        retry: RetryPolicy | None = None,
        connect: Connect | None = None,
        middlewares: Sequence[aiohttp.ClientMiddlewareType] = (),
    ) -> None:
        self.name = name
        headers = {"anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        root = (base_url or DEFAULT_BASE_URL).rstrip("/").removesuffix("/v1")
        self._http = HttpCaller(
            name,
            base_url=root,
            headers=headers,
            secret=api_key,
            key_env=key_env,
            timeout_s=timeout_s,
            retry=retry or RetryPolicy(),
            connect=connect,
            middlewares=middlewares,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    def body(self, request: CompletionRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_output_tokens,
            "messages": wire_messages(request),
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.system:
            body["system"] = [
                {"type": "text", "text": request.system, "cache_control": dict(EPHEMERAL)}
            ]
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        if request.stream:
            body["stream"] = True
        return body

    async def complete(
        self, request: CompletionRequest, on_text: OnText | None = None
    ) -> Completion:
        response = await self._http.open("/v1/messages", self.body(request))
        if request.stream:
            return await self._read_stream(response, request, on_text)
        data = await self._http.read_json(response, estimate_usage(request))
        return self._parse(data, request)

    def _parse(self, data: dict[str, Any], request: CompletionRequest) -> Completion:
        try:
            text, calls = "", []
            for block in data["content"]:
                if block["type"] == "text":
                    text += block["text"]
                elif block["type"] == "tool_use":
                    arguments = json.dumps(block.get("input") or {})
                    calls.append(
                        ToolCall(id=str(block["id"]), name=str(block["name"]), arguments=arguments)
                    )
            usage = anthropic_usage(data["usage"])
            if not isinstance(text, str):
                raise TypeError("text is not text")
        except (KeyError, TypeError, AttributeError, ValueError):
            raise self._http.broken(
                "the reply had an unexpected shape.", estimate_usage(request)
            ) from None
        return Completion(
            text=text,
            tool_calls=tuple(calls),
            usage=usage,
            model=str(data.get("model") or request.model),
            stop_reason=str(data.get("stop_reason") or ""),
        )

    async def _read_stream(
        self, response: aiohttp.ClientResponse, request: CompletionRequest, on_text: OnText | None
    ) -> Completion:
        state = _Stream(model=request.model)
        events = Events(response.content)
        try:
            async for _, data in events:
                if await self._take(state, data, request, on_text):
                    break
            await drain(response)
        except aiohttp.ClientError as exc:
            if not state.output_chars:
                usage, _ = state.usage(request)
                sentence = f"{self._http.transport_failure(exc)} before any answer arrived."
                raise self._http.broken(sentence, usage) from None
            state.stop_reason = "interrupted"
            state.blocks = {}  # a tool call from a broken reply must not run
        finally:
            response.release()
        usage, estimated = state.usage(request)
        return Completion(
            text="".join(state.text),
            tool_calls=state.tool_calls(),
            usage=usage,
            model=state.model,
            usage_estimated=estimated,
            stop_reason=state.stop_reason,
        )

    async def _take(
        self, state: _Stream, data: str, request: CompletionRequest, on_text: OnText | None
    ) -> bool:
        """One event into `state`, its text to `on_text`; True at message_stop."""
        try:
            event = json.loads(data)
            kind: str = event["type"]
            if kind == "error":
                error = event.get("error") or {}
                said = f": {error.get('type', 'error')}, {str(error.get('message', ''))[:160]}"
                usage, _ = state.usage(request)
                raise self._http.broken(f"the stream reported an error{said}.", usage)
            piece = state.feed(kind, event)
        except (KeyError, TypeError, AttributeError, ValueError):
            usage, _ = state.usage(request)
            raise self._http.broken("the stream carried an unreadable event.", usage) from None
        if piece:
            state.text.append(piece)
            if on_text:
                await on_text(piece)
        return kind == "message_stop"
