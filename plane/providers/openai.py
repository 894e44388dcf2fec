"""OpenAI-compatible Chat Completions: OpenAI, OpenRouter, Ollama, vLLM,
LM Studio, llama.cpp's server and the embedded model.

Usage: `prompt_tokens` already includes `prompt_tokens_details.cached_tokens`,
which is exactly the plane's normalised `Usage`. Streaming asks for
`stream_options.include_usage`, so the last chunk (`choices: []`) carries it;
a server that ignores the option, or a stream that ends early, leaves the call
charged from an estimate, marked as such.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

from plane.providers import connections, json_tools
from plane.providers.base import (
    ChatMessage,
    Completion,
    CompletionRequest,
    OnText,
    ToolCall,
)
from plane.providers.connections import Connect
from plane.providers.encoded import EncodedHistories
from plane.providers.http import (
    Events,
    HttpCaller,
    RetryPolicy,
    drain,
    estimate_usage,
    token_count,
)
from plane.wire.protocol import Usage


def openai_usage(usage: dict[str, Any]) -> Usage:
    """The plane's `Usage` from an OpenAI-shaped `usage` object. DeepSeek's
    `prompt_cache_hit_tokens` and OpenRouter's `cache_write_tokens` are read
    too; both are parts of `prompt_tokens`, as `cached_tokens` is."""
    prompt = token_count(usage.get("prompt_tokens"))
    details = usage.get("prompt_tokens_details") or {}
    cached = token_count(details.get("cached_tokens")) or token_count(
        usage.get("prompt_cache_hit_tokens")
    )
    written = token_count(details.get("cache_write_tokens"))
    cached = min(cached, prompt)
    return Usage(
        input_tokens=prompt,
        cache_read_tokens=cached,
        cache_write_tokens=min(written, prompt - cached),
        output_tokens=token_count(usage.get("completion_tokens")),
    )


def wire_messages(request: CompletionRequest) -> list[dict[str, Any]]:
    json_mode = request.tool_mode == "json_schema" and bool(request.tools)
    system = (
        json_tools.system_prompt(request.system, request.tools) if json_mode else (request.system)
    )
    head = [{"role": "system", "content": system}] if system else []
    if json_mode:
        return head + json_tools.render(request.messages)
    return head + [wire_message(m) for m in request.messages]


def wire_message(message: ChatMessage) -> dict[str, Any]:
    """One history message as the API takes it (`EncodedHistories` keeps its JSON)."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        wire["content"] = message.content or None
        wire["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    return wire


@dataclass
class _Stream:
    """What a stream has said so far."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    usage: Usage | None = None
    finish: str = ""
    model: str = ""
    done: bool = False

    @property
    def output_chars(self) -> int:
        args = sum(len(c["name"]) + len("".join(c["args"])) for c in self.calls.values())
        return len("".join(self.text)) + args

    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(
            ToolCall(id=c["id"], name=c["name"], arguments="".join(c["args"]) or "{}")
            for _, c in sorted(self.calls.items())
        )


class OpenAIProvider:
    """A `Provider` for any OpenAI-compatible `base_url` (ending in /v1)."""

    def __init__(
        self,
        name: str,
        *,
        base_url: str,
        api_key: str | None = None,
        key_env: str | None = None,
        timeout_s: float = 120,
        retry: RetryPolicy | None = None,
        connect: Connect | None = None,
        middlewares: Sequence[aiohttp.ClientMiddlewareType] = (),
        max_tokens_field: str = "max_tokens",
    ) -> None:
        """`max_tokens_field`: OpenAI's own API wants `max_completion_tokens`
        for its newer models; most compatible servers read `max_tokens`."""
        self.name = name
        self.max_tokens_field = max_tokens_field
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = HttpCaller(
            name,
            base_url=base_url,
            headers=headers,
            secret=api_key,
            key_env=key_env,
            timeout_s=timeout_s,
            retry=retry or RetryPolicy(),
            connect=connect,
            middlewares=middlewares,
        )
        self._histories = EncodedHistories(wire_message)

    async def aclose(self) -> None:
        await self._http.aclose()

    def body(self, request: CompletionRequest) -> dict[str, Any]:
        """The request as the provider's JSON object (`encode` writes it)."""
        return {
            "model": request.model,
            "messages": wire_messages(request),
            **self._settings(request),
        }

    def encode(self, request: CompletionRequest) -> bytes:
        """`body(request)` as the bytes sent, `connections.json_body`'s to
        the byte, with each history message encoded once (`EncodedHistories`):
        the rest is a few fields, written each call."""
        if request.tool_mode == "json_schema" and request.tools:
            return connections.json_body(self.body(request))
        try:
            model = orjson.dumps(request.model)
            system = (
                orjson.dumps({"role": "system", "content": request.system})
                if request.system
                else b""
            )
            history = self._histories.join(request.messages)
            settings = orjson.dumps(self._settings(request))
        except TypeError:  # what orjson does not write: the standard library's way
            return connections.json_body(self.body(request))
        messages = b",".join(part for part in (system, history) if part)
        return b'{"model":' + model + b',"messages":[' + messages + b"]," + settings[1:]

    def _settings(self, request: CompletionRequest) -> dict[str, Any]:
        """What a body says after its messages, in its order."""
        body: dict[str, Any] = {self.max_tokens_field: request.max_output_tokens}
        if request.tools and request.tool_mode == "json_schema":
            body["response_format"] = json_tools.response_format(request.tools)
        elif request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in request.tools
            ]
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.frequency_penalty is not None:
            body["frequency_penalty"] = request.frequency_penalty
        if request.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    async def complete(
        self, request: CompletionRequest, on_text: OnText | None = None
    ) -> Completion:
        json_mode = request.tool_mode == "json_schema" and bool(request.tools)
        response = await self._http.open("/chat/completions", self.encode(request))
        if request.stream:
            # JSON-mode text is an object, not prose: the answer is sent once parsed.
            completion = await self._read_stream(response, request, None if json_mode else on_text)
        else:
            data = await self._http.read_json(response, estimate_usage(request))
            completion = self._parse(data, request)
        if not json_mode:
            return completion
        text, calls = json_tools.parse(completion.text, request.tools)
        if on_text and text and request.stream:
            await on_text(text)
        return Completion(
            text=text,
            tool_calls=calls + completion.tool_calls,
            usage=completion.usage,
            model=completion.model,
            usage_estimated=completion.usage_estimated,
            stop_reason=completion.stop_reason,
        )

    def _parse(self, data: dict[str, Any], request: CompletionRequest) -> Completion:
        try:
            choice = data["choices"][0]
            message = choice["message"]
            calls = tuple(
                ToolCall(
                    id=str(c["id"]),
                    name=str(c["function"]["name"]),
                    arguments=c["function"].get("arguments") or "{}",
                )
                for c in message.get("tool_calls") or ()
            )
            text = message.get("content") or ""
            raw_usage = data.get("usage")
            usage = openai_usage(raw_usage) if raw_usage else None
            if not isinstance(text, str):
                raise TypeError("content is not text")
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            raise self._http.broken(
                "the reply had an unexpected shape.", estimate_usage(request)
            ) from None
        output_chars = len(text) + sum(len(c.arguments) for c in calls)
        return Completion(
            text=text,
            tool_calls=calls,
            usage=usage or estimate_usage(request, output_chars),
            model=str(data.get("model") or request.model),
            usage_estimated=usage is None,
            stop_reason=str(choice.get("finish_reason") or ""),
        )

    async def _read_stream(
        self, response: aiohttp.ClientResponse, request: CompletionRequest, on_text: OnText | None
    ) -> Completion:
        state = _Stream(model=request.model)
        events = Events(response.content)
        try:
            async for _, data in events:
                if data.strip() == "[DONE]":
                    state.done = True
                    break
                await self._take(state, data, request, on_text)
            await drain(response)
        except aiohttp.ClientError as exc:
            if not state.output_chars:
                estimate = estimate_usage(request)
                sentence = f"{self._http.transport_failure(exc)} before any answer arrived."
                raise self._http.broken(sentence, estimate) from None
            state.finish = "interrupted"
            state.calls = {}  # a half-written tool call must not run
        finally:
            response.release()
        if not state.finish:
            state.calls = {}  # the stream ended before the calls were whole
        text = "".join(state.text)
        return Completion(
            text=text,
            tool_calls=state.tool_calls(),
            usage=state.usage or estimate_usage(request, state.output_chars),
            model=state.model,
            usage_estimated=state.usage is None,
            stop_reason=state.finish,
        )

    async def _take(
        self, state: _Stream, data: str, request: CompletionRequest, on_text: OnText | None
    ) -> None:
        """One chunk of the stream into `state`; the text to `on_text`."""
        try:
            chunk = read_json(data)
            if not isinstance(chunk, dict):
                raise TypeError("chunk is not an object")
            if "error" in chunk:
                said = _stream_error(chunk["error"])
                raise self._http.broken(
                    f"the stream reported an error{said}.",
                    estimate_usage(request, state.output_chars),
                )
            state.model = str(chunk.get("model") or state.model)
            if chunk.get("usage"):
                state.usage = openai_usage(chunk["usage"])
            piece = ""
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                piece += delta.get("content") or ""
                for call in delta.get("tool_calls") or ():
                    slot = state.calls.setdefault(
                        int(call.get("index", 0)), {"id": "", "name": "", "args": []}
                    )
                    function = call.get("function") or {}
                    slot["id"] = call.get("id") or slot["id"]
                    slot["name"] = function.get("name") or slot["name"]
                    slot["args"].append(function.get("arguments") or "")
                state.finish = choice.get("finish_reason") or state.finish
        except (ValueError, TypeError, AttributeError):
            raise self._http.broken(
                "the stream carried an unreadable event.",
                estimate_usage(request, state.output_chars),
            ) from None
        if piece:
            state.text.append(piece)
            if on_text:
                await on_text(piece)


def read_json(data: str) -> Any:
    """`json.loads(data)`, by orjson where it reads it (a stream's every
    event; the standard library took twice as long), by the standard
    library where orjson does not (an integer past 64 bits, NaN, a lone
    surrogate), so what is read, or refused, is the same."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def _stream_error(error: Any) -> str:
    message = error.get("message") if isinstance(error, dict) else error
    return f": {str(message)[:160]}" if message else ""
