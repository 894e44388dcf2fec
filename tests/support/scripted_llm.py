"""A real local HTTP server that speaks OpenAI's and Anthropic's chat APIs
with scripted replies, so provider and runtime tests go over real sockets.

Why a hand-rolled `http.server` rather than a mock: the faults the plane must
survive live on the wire (a connection reset, a stream cut before its usage,
a server that never answers), and only a real socket produces them. The
replies are shaped like the providers' documented ones:

- OpenAI Chat Completions, `POST /v1/chat/completions`: `usage.prompt_tokens`
  includes `prompt_tokens_details.cached_tokens`; streaming is SSE `data:`
  chunks ending with `[DONE]`, with a final `choices: []` chunk carrying the
  usage only when the request set `stream_options.include_usage`.
- Anthropic Messages, `POST /v1/messages`: `usage.input_tokens` excludes
  `cache_read_input_tokens` and `cache_creation_input_tokens`; streaming is
  the `message_start … message_stop` event sequence; web searches a server
  tool made are `usage.server_tool_use.web_search_requests`.
- OpenAI Responses, `POST /v1/responses`: usage in the response (streaming:
  in the final `response.completed` event), `input_tokens` including
  `input_tokens_details.cached_tokens`; each response has an id (`resp_N`).

Script it with `reply()`, `fault()`, `malformed()`, `cut_stream()`, `stall()`,
`verbatim()`, `hang()` and `reset_connection()`; each request takes the next scripted step,
and an empty script asks `responder` (when set) or answers with
`default_reply`. Every request body is kept in `requests`, in order, and every
response the server finished sending — what a provider bills — in `billed`.

Outside pytest:

    with ScriptedLLM() as llm:
        llm.reply("hello", usage=Usage(input_tokens=10, output_tokens=2))
        ...  # point an OpenAI client at llm.base_url, Anthropic at llm.anthropic_url
"""

from __future__ import annotations

import json
import math
import re
import selectors
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from plane.wire.protocol import Usage

__all__ = [
    "Billed",
    "CutStream",
    "Fault",
    "Hang",
    "Malformed",
    "Reply",
    "Reset",
    "ScriptedLLM",
    "Stall",
    "Verbatim",
    "derived_usage",
]


# ── the script ──────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Reply:
    text: str = "ok"
    usage: Usage | None = None
    """None: derived from the request's size (see `derived_usage`)."""
    tool_calls: tuple[tuple[str, dict[str, Any] | str], ...] = ()
    """(name, arguments); arguments given as a string are sent verbatim on the
    OpenAI wire (text no JSON encoder would write: a 5,000-digit number)."""
    delay_s: float = 0
    """Seconds to wait before answering (a slow provider, a turn in flight)."""
    cut_at_limit: bool = False
    """The answer ends because it reached the request's max tokens (OpenAI's
    finish_reason `length`, Anthropic's stop_reason `max_tokens`)."""
    searches: int = 0
    """Web searches a server tool made (Anthropic's usage reports them; they are billed)."""
    pause_s: float = 0
    """Streaming: seconds between the first event (Anthropic's `message_start`,
    which announces the prompt's tokens) and the rest, as an answer being written."""
    until: threading.Event | None = None
    """Answer only once it is set (a call in flight for as long as a test
    needs, however slow the machine): `ScriptedLLM.reply(..., until=event)`."""
    rest_until: threading.Event | None = None
    """Streaming: the first event sent at once, the rest only once it is set
    (a prompt announced, its answer written for as long as a test needs)."""
    end_until: threading.Event | None = None
    """Streaming: the last two events (the final usage and the end, on every
    wire) sent only once it is set: an answer still being written, however
    fast its reader reads what came before."""
    answered_as: str | None = None
    """The model the reply names as the one that answered (a router's
    fallback); None: the model asked for."""


@dataclass(frozen=True)
class Fault:
    status: int
    retry_after: float | str | None = None
    message: str = "scripted fault"
    body: dict[str, Any] | None = None
    """The error body verbatim (a real server's own shape); None: the wire's usual one."""
    until: threading.Event | None = None
    """Answered only once it is set (a call in flight for as long as a test
    needs): `ScriptedLLM.fault(..., until=event)`."""


@dataclass(frozen=True)
class Malformed:
    """A 200 whose body (or, streaming, whose first event) is not valid JSON."""


@dataclass(frozen=True)
class CutStream:
    """Streaming: the text up to `after_text`, then the stream ends cleanly
    but without its usage (OpenAI: no usage chunk, no [DONE]; Anthropic:
    no message_delta / message_stop). Not streaming: a body cut short."""

    after_text: str = ""
    reset: bool = False
    """Break the connection with a TCP RST instead of ending the stream."""
    usage: Usage | None = None
    """What the provider bills for it, and announces before the cut where its
    API does (Anthropic's `message_start`); None: derived from the request."""


@dataclass(frozen=True)
class Stall:
    """Streaming: the text up to `after_text`, then nothing for `seconds`
    (a turn caught mid-stream), then the connection drops. Never billed."""

    after_text: str = ""
    seconds: float = 30


@dataclass(frozen=True)
class Hang:
    """Accept the request, send nothing for `seconds`, then drop the connection."""

    seconds: float


@dataclass(frozen=True)
class Reset:
    """Close the connection with a TCP RST as soon as the request is read."""


@dataclass(frozen=True)
class Verbatim:
    """Streaming: these server-sent events exactly as given (a provider that
    breaks its own protocol), then the end of the stream, or with `reset` a
    TCP RST. `usage` is what it bills, if anything."""

    events: tuple[bytes, ...]
    reset: bool = False
    usage: Usage | None = None
    hold_s: float = 0
    """Then keep the stream open this long before ending it (a provider, or a
    proxy, that does not close after its last event)."""
    held: tuple[tuple[int, threading.Event], ...] = ()
    """(n, gate) pairs: the events from the n-th on sent only once the gate
    is set (a stream still being written, however fast its reader reads)."""


Step = Reply | Fault | Malformed | CutStream | Stall | Hang | Reset | Verbatim


@dataclass(frozen=True)
class Billed:
    """A response the server sent to its last byte: what a provider bills."""

    serial: int
    """The request's number, from 1, as in `requests`."""
    model: str
    cut: bool
    """A cut stream or body: the client never saw its usage."""
    usage: Usage
    """What the response reported (for a cut one, what it would have)."""
    at: float = field(default_factory=time.monotonic)
    searches: int = 0
    """Web searches billed with it."""


# ── deterministic usage ─────────────────────────────────────────────────────


def _tokens(chars: int) -> int:
    return max(1, math.ceil(chars / 4))


def _text_of(content: Any) -> str:
    """The text of an OpenAI or Anthropic `content` (string or list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                for key in ("text", "content"):
                    if key in part:
                        parts.append(_text_of(part[key]))
                if "input" in part:
                    parts.append(json.dumps(part["input"], sort_keys=True))
        return "".join(parts)
    return ""


def prompt_chars(body: dict[str, Any]) -> int:
    """Characters of a request's prompt: system (or instructions), every
    message's (or input item's) text and tool calls, and the tools' JSON."""
    chars = len(_text_of(body.get("system", ""))) + len(_text_of(body.get("instructions", "")))
    given = body.get("input", [])
    items = [{"content": given}] if isinstance(given, str) else list(given)
    for message in [*body.get("messages", []), *items]:
        if not isinstance(message, dict):
            continue
        chars += len(_text_of(message.get("content")))
        for call in message.get("tool_calls") or []:
            chars += len(json.dumps(call.get("function", {}), sort_keys=True))
    if body.get("tools"):
        chars += len(json.dumps(body["tools"], sort_keys=True))
    return chars


def derived_usage(body: dict[str, Any], text: str, tool_calls: tuple = ()) -> Usage:
    """What a scripted reply with no explicit usage reports: ceil(chars / 4)
    of the prompt in, ceil(chars / 4) of the answer out, never zero, no cache.
    Deterministic, so costs in tests are predictable."""
    out_chars = len(text) + sum(len(name) + len(_arguments(args)) for name, args in tool_calls)
    return Usage(input_tokens=_tokens(prompt_chars(body)), output_tokens=_tokens(out_chars))


# ── wire shapes ─────────────────────────────────────────────────────────────


def _arguments(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def _openai_usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {
            "cached_tokens": usage.cache_read_tokens,
            "audio_tokens": usage.input_audio_tokens,
        },
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": usage.output_audio_tokens,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _searched(searches: int) -> dict[str, Any]:
    """Anthropic's count of a server tool's web searches, in a usage object."""
    return {"server_tool_use": {"web_search_requests": searches}} if searches else {}


def _choices(body: dict[str, Any]) -> int:
    """Chat Completions' `n`: how many answers the request asks for."""
    n = body.get("n")
    return n if isinstance(n, int) and n > 0 else 1


def _anthropic_usage(usage: Usage, searches: int = 0) -> dict[str, Any]:
    return _searched(searches) | {
        "input_tokens": usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        **(
            {
                "cache_creation": {
                    "ephemeral_5m_input_tokens": usage.cache_write_tokens
                    - usage.cache_write_1h_tokens,
                    "ephemeral_1h_input_tokens": usage.cache_write_1h_tokens,
                }
            }
            if usage.cache_write_1h_tokens
            else {}
        ),
        "cache_read_input_tokens": usage.cache_read_tokens,
        "output_tokens": usage.output_tokens,
    }


def _pieces(text: str) -> list[str]:
    """The text as a stream would carry it: a word (and its space) at a time."""
    return [p for p in re.findall(r"\S+\s*|\s+", text) if p]


class _Wire:
    """One protocol's shapes; subclasses per API."""

    def __init__(self, body: dict[str, Any], serial: int) -> None:
        self.body = body
        self.model = str(body.get("model", "scripted"))
        self.serial = serial

    def error(self, status: int, message: str) -> dict[str, Any]:
        raise NotImplementedError

    def message(self, reply: Reply, usage: Usage) -> dict[str, Any]:
        raise NotImplementedError

    def events(self, reply: Reply, usage: Usage, cut: bool = False) -> list[bytes]:
        """SSE events for `reply`; `cut` stops after its text, before anything
        that carries the final usage (Anthropic's message_start, which states
        the input tokens, still goes out as it would)."""
        raise NotImplementedError


def _finish(reply: Reply) -> str:
    """OpenAI's finish_reason for `reply`."""
    if reply.cut_at_limit:
        return "length"
    return "tool_calls" if reply.tool_calls else "stop"


class _OpenAI(_Wire):
    def error(self, status: int, message: str) -> dict[str, Any]:
        kind = {429: "rate_limit_exceeded", 401: "invalid_api_key"}.get(status, "server_error")
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}

    def _calls(self, reply: Reply) -> list[dict[str, Any]]:
        return [
            {
                "id": f"call_{self.serial}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": _arguments(args)},
            }
            for i, (name, args) in enumerate(reply.tool_calls)
        ]

    def message(self, reply: Reply, usage: Usage) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = self._calls(reply)
        return {
            "id": f"chatcmpl-{self.serial}",
            "object": "chat.completion",
            "created": 1_700_000_000 + self.serial,
            "model": self.model,
            "choices": [
                {
                    "index": i,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": _finish(reply),
                }
                for i in range(_choices(self.body))
            ],
            "usage": _openai_usage(usage),
            "system_fingerprint": "fp_scripted",
        }

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        chunk: dict[str, Any] = {
            "id": f"chatcmpl-{self.serial}",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000 + self.serial,
            "model": self.model,
            "system_fingerprint": "fp_scripted",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if self._include_usage:
            chunk["usage"] = None
        return _sse(chunk)

    @property
    def _include_usage(self) -> bool:
        options = self.body.get("stream_options") or {}
        return bool(options.get("include_usage"))

    def events(self, reply: Reply, usage: Usage, cut: bool = False) -> list[bytes]:
        out = [self._chunk({"role": "assistant", "content": "", "refusal": None})]
        out += [self._chunk({"content": piece}) for piece in _pieces(reply.text)]
        if cut:
            return out
        for i, call in enumerate(self._calls(reply)):
            head = {"index": i, "id": call["id"], "type": "function"}
            head["function"] = {"name": call["function"]["name"], "arguments": ""}
            out.append(self._chunk({"tool_calls": [head]}))
            args = call["function"]["arguments"]
            for j in range(0, len(args), 8):
                piece = {"index": i, "function": {"arguments": args[j : j + 8]}}
                out.append(self._chunk({"tool_calls": [piece]}))
        out.append(self._chunk({}, _finish(reply)))
        if self._include_usage:
            final = {
                "id": f"chatcmpl-{self.serial}",
                "object": "chat.completion.chunk",
                "created": 1_700_000_000 + self.serial,
                "model": self.model,
                "system_fingerprint": "fp_scripted",
                "choices": [],
                "usage": _openai_usage(usage),
            }
            out.append(_sse(final))
        out.append(b"data: [DONE]\n\n")
        return out


class _Anthropic(_Wire):
    def error(self, status: int, message: str) -> dict[str, Any]:
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            429: "rate_limit_error",
            529: "overloaded_error",
        }.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def _blocks(self, reply: Reply) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if reply.text:
            blocks.append({"type": "text", "text": reply.text})
        for i, (name, args) in enumerate(reply.tool_calls):
            blocks.append(
                {"type": "tool_use", "id": f"toolu_{self.serial}_{i}", "name": name, "input": args}
            )
        return blocks

    def _stop_reason(self, reply: Reply) -> str:
        if reply.cut_at_limit:
            return "max_tokens"
        return "tool_use" if reply.tool_calls else "end_turn"

    def message(self, reply: Reply, usage: Usage) -> dict[str, Any]:
        return {
            "id": f"msg_{self.serial}",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self._blocks(reply),
            "stop_reason": self._stop_reason(reply),
            "stop_sequence": None,
            "usage": _anthropic_usage(usage, reply.searches),
        }

    def events(self, reply: Reply, usage: Usage, cut: bool = False) -> list[bytes]:
        start = {
            "type": "message_start",
            "message": {
                "id": f"msg_{self.serial}",
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": _anthropic_usage(usage) | {"output_tokens": 1},
            },
        }
        out = [_sse(start, "message_start")]
        index = 0
        text = reply.text
        if text or cut:
            block = {"type": "content_block_start", "index": 0}
            block["content_block"] = {"type": "text", "text": ""}
            out.append(_sse(block, "content_block_start"))
            out.append(_sse({"type": "ping"}, "ping"))
            for piece in _pieces(text):
                delta = {"type": "text_delta", "text": piece}
                out.append(
                    _sse(
                        {"type": "content_block_delta", "index": 0, "delta": delta},
                        "content_block_delta",
                    )
                )
            if cut:
                return out
            out.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
            index = 1
        for block in self._blocks(reply):
            if block["type"] != "tool_use":
                continue
            head = {**block, "input": {}}
            out.append(
                _sse(
                    {"type": "content_block_start", "index": index, "content_block": head},
                    "content_block_start",
                )
            )
            args = json.dumps(block["input"])
            for j in range(0, len(args), 8):
                delta = {"type": "input_json_delta", "partial_json": args[j : j + 8]}
                out.append(
                    _sse(
                        {"type": "content_block_delta", "index": index, "delta": delta},
                        "content_block_delta",
                    )
                )
            out.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
            index += 1
        final = {
            "type": "message_delta",
            "delta": {"stop_reason": self._stop_reason(reply), "stop_sequence": None},
            "usage": {"output_tokens": usage.output_tokens} | _searched(reply.searches),
        }
        out.append(_sse(final, "message_delta"))
        out.append(_sse({"type": "message_stop"}, "message_stop"))
        return out


class _Responses(_Wire):
    """OpenAI Responses: one message item with the text; usage in the
    response, or (streaming) in the final `response.completed` event."""

    def error(self, status: int, message: str) -> dict[str, Any]:
        return _OpenAI(self.body, self.serial).error(status, message)

    def message(self, reply: Reply, usage: Usage | None) -> dict[str, Any]:
        text = {"type": "output_text", "text": reply.text, "annotations": []}
        item = {
            "type": "message",
            "id": f"msg_{self.serial}",
            "status": "completed",
            "role": "assistant",
            "content": [text],
        }
        return {
            "id": f"resp_{self.serial}",
            "object": "response",
            "created_at": 1_700_000_000 + self.serial,
            "status": "completed" if usage is not None else "in_progress",
            "model": self.model,
            "output": [item] if usage is not None else [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": None if usage is None else _responses_usage(usage),
        }

    def events(self, reply: Reply, usage: Usage, cut: bool = False) -> list[bytes]:
        """As OpenAI streams one: the response created, its message item and
        text part opened, the text, both closed, then `response.completed`
        with the usage (left out when `cut`)."""
        item_id = f"msg_{self.serial}"
        where = {"item_id": item_id, "output_index": 0, "content_index": 0}
        item = {"type": "message", "id": item_id, "status": "in_progress", "role": "assistant"}
        part = {"type": "output_text", "text": "", "annotations": []}
        out: list[dict[str, Any]] = [
            {"type": "response.created", "response": self.message(reply, None)},
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": item | {"content": []},
            },
            {"type": "response.content_part.added", **where, "part": part},
        ]
        out += [
            {"type": "response.output_text.delta", **where, "delta": piece}
            for piece in _pieces(reply.text)
        ]
        if not cut:
            done = part | {"text": reply.text}
            out += [
                {"type": "response.output_text.done", **where, "text": reply.text},
                {"type": "response.content_part.done", **where, "part": done},
                {
                    "type": "response.output_item.done",
                    "output_index": 0,
                    "item": item | {"status": "completed", "content": [done]},
                },
                {"type": "response.completed", "response": self.message(reply, usage)},
            ]
        return [_sse(event | {"sequence_number": n}, event["type"]) for n, event in enumerate(out)]


def _responses_usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


WIRES: dict[str, type[_Wire]] = {
    "/v1/chat/completions": _OpenAI,
    "/v1/messages": _Anthropic,
    "/v1/responses": _Responses,
}


# ── the server ──────────────────────────────────────────────────────────────


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10
    """Idle keep-alive connections close after this many seconds."""
    disable_nagle_algorithm = True
    """Each response goes out in several writes (the status line and headers,
    then the body): with Nagle's algorithm on, the body waited for the
    client's delayed ACK, about 40 ms a call, as no real provider makes it."""
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
        elif self.path == "/health":
            self._json(200, {"status": "ok"})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        path = self.path.split("?")[0].rstrip("/")
        wire_class = WIRES.get(path)
        if wire_class is None:
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._json(400, {"error": {"message": "request body is not JSON"}})
            return
        llm = self.server.llm
        step, serial = llm._record(path, dict(self.headers), body)
        self._answer(step, wire_class(body, serial), bool(body.get("stream")))

    def _waited(self, until: threading.Event | None) -> bool:
        """Until `until` is set (None: at once); False, the connection to be
        closed, if the model hung up meanwhile."""
        while until is not None and not until.wait(0.05):
            if self.server.llm.stopping.is_set():
                self.close_connection = True
                return False
        return True

    def _answer(self, step: Step, wire: _Wire, stream: bool) -> None:
        llm = self.server.llm
        match step:
            case Reply():
                if step.delay_s and llm.stopping.wait(step.delay_s):
                    self.close_connection = True  # hung up: the client hears it at once
                    return
                if not self._waited(step.until):
                    return
                usage = step.usage or derived_usage(wire.body, step.text, step.tool_calls)
                wire.model = step.answered_as or wire.model
                if stream:
                    events = wire.events(step, usage)
                    self._stream(
                        events,
                        pause_s=step.pause_s,
                        rest_until=step.rest_until,
                        end_until=step.end_until,
                    )
                else:
                    self._json(200, wire.message(step, usage))
                llm._bill(Billed(wire.serial, wire.model, False, usage, searches=step.searches))
            case Fault():
                if not self._waited(step.until):
                    return
                headers = {}
                if step.retry_after is not None:
                    headers["Retry-After"] = str(step.retry_after)
                body = step.body if step.body is not None else wire.error(step.status, step.message)
                self._json(step.status, body, headers)
            case Malformed():
                if stream:
                    self._stream([b'data: {"choices": [{"delta": {"content": "x"\n\n'])
                else:
                    self._raw(200, b'{"id": "broken", "choices": [', "application/json")
            case CutStream():
                usage = step.usage or derived_usage(wire.body, step.after_text)
                if stream:
                    reply = Reply(step.after_text)
                    self._stream(wire.events(reply, usage, cut=True), reset=step.reset)
                else:
                    self._cut_body(wire)
                llm._bill(Billed(wire.serial, wire.model, True, usage))
            case Stall():
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                reply = Reply(step.after_text)
                for event in wire.events(reply, Usage(), cut=True):
                    self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                    self.wfile.flush()
                llm.stopping.wait(step.seconds)
                self.close_connection = True
            case Verbatim():
                self._stream(
                    list(step.events), reset=step.reset, hold_s=step.hold_s, held=step.held
                )
                if step.usage is not None:
                    llm._bill(Billed(wire.serial, wire.model, step.reset, step.usage))
            case Hang():
                self.server.llm.stopping.wait(step.seconds)
                self.close_connection = True
            case Reset():
                self._reset()

    def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        self._raw(status, json.dumps(data).encode(), "application/json", headers)

    def _raw(
        self, status: int, body: bytes, kind: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _stream(
        self,
        events: list[bytes],
        reset: bool = False,
        pause_s: float = 0,
        hold_s: float = 0,
        rest_until: threading.Event | None = None,
        end_until: threading.Event | None = None,
        held: tuple[tuple[int, threading.Event], ...] = (),
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for n, event in enumerate(events):
            if n == 1 and pause_s:
                self.server.llm.stopping.wait(pause_s)
            waits = [rest_until] if n == 1 else []
            waits += [end_until] if n == len(events) - 2 else []
            waits += [gate for at, gate in held if at == n]
            for gate in waits:
                while gate is not None and not gate.wait(0.05):
                    if self.server.llm.stopping.is_set():
                        self.close_connection = True
                        return
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            self.wfile.flush()
        if hold_s and self.server.llm.stopping.wait(hold_s):
            self.close_connection = True  # hung up: the stream never ends
            return
        if reset:
            time.sleep(0.05)  # let the client read what came before the break
            self._reset()
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _cut_body(self, wire: _Wire) -> None:
        whole = json.dumps(wire.message(Reply("cut"), Usage(input_tokens=1))).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(whole)))
        self.end_headers()
        self.wfile.write(whole[: len(whole) // 2])
        self.wfile.flush()
        self.close_connection = True

    def _reset(self) -> None:
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128
    """socketserver's 5 drops connections opened at once (a client's SYN is
    answered a second later): many calls in flight need a real server's backlog."""
    timeout = 1.0
    """How long `handle_request` waits for the connection the loop saw
    waiting, should it have gone before it was accepted."""

    def __init__(self, llm: ScriptedLLM) -> None:
        self.llm = llm
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        self.accepted = 0
        """Connections ever accepted: a client that keeps them alive makes few."""
        self._woken, self._wake = socket.socketpair()
        super().__init__(("127.0.0.1", 0), _Handler)

    def serve_until_woken(self) -> None:
        """socketserver's `serve_forever`, but waiting on a second socket that
        `wake` writes to, instead of polling: `serve_forever` sees `shutdown`
        only between two waits, so for a test's end not to wait on it, it woke
        every 10 ms the whole test long (~7 ms of CPU a second, with the GIL
        taken from the test's own loop each time)."""
        with selectors.DefaultSelector() as selector:
            selector.register(self, selectors.EVENT_READ)
            selector.register(self._woken, selectors.EVENT_READ)
            while True:
                ready = [key.fileobj for key, _ in selector.select()]
                if self._woken in ready:
                    return
                self.handle_request()  # the one waiting: accepted at once

    def wake(self) -> None:
        """`serve_until_woken` returns."""
        self._wake.send(b"x")

    def server_close(self) -> None:
        super().server_close()
        self._woken.close()
        self._wake.close()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.accepted += 1
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer is normal here (timeouts, cut
        streams); say nothing."""

    def drop_connections(self) -> None:
        with self.connections_lock:
            open_now = list(self.connections)
        for conn in open_now:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


@dataclass
class _Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)


class ScriptedLLM:
    """The scripted server. Thread-safe: requests may arrive concurrently;
    each takes the next step of the script in arrival order."""

    def __init__(self) -> None:
        self._script: deque[Step] = deque()
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self._received: list[_Received] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._default: Reply = Reply("ok")
        self._billed: list[Billed] = []
        self.responder: Callable[[dict[str, Any], int], Step] | None = None
        """What answers when the script is empty, from the request body and
        its number (a scripted model that decides); None: `default_reply`."""

    # lifecycle

    def start(self) -> Self:
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_until_woken, name="scripted-llm", daemon=True
        )
        self._thread.start()
        return self

    def hang_up(self) -> None:
        """Every delayed, stalled or hanging answer ends now, unanswered, and
        later ones do not wait: a test's plane then stops at once instead of
        giving the turn it left hanging its whole grace."""
        self.stopping.set()

    def stop(self) -> None:
        if self._server is None:
            return
        self.hang_up()
        self._server.wake()
        assert self._thread is not None
        self._thread.join(timeout=5)
        self._server.drop_connections()
        self._server.server_close()
        self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def drop_connections(self) -> None:
        """Close every open connection, as a server's idle timeout does."""
        assert self._server is not None
        self._server.drop_connections()

    @property
    def connections_accepted(self) -> int:
        assert self._server is not None
        return self._server.accepted

    # where it listens

    @property
    def port(self) -> int:
        assert self._server is not None, "the scripted server is not started"
        return self._server.server_address[1]

    @property
    def anthropic_url(self) -> str:
        """Anthropic's base URL convention: the client appends /v1/messages."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """OpenAI's base URL convention: the client appends /chat/completions."""
        return f"{self.anthropic_url}/v1"

    # the script

    def reply(
        self,
        text: str = "ok",
        *,
        usage: Usage | None = None,
        tool_calls: list[tuple[str, dict[str, Any] | str]] | None = None,
        delay_s: float = 0,
        cut_at_limit: bool = False,
        searches: int = 0,
        until: threading.Event | None = None,
        rest_until: threading.Event | None = None,
    ) -> ScriptedLLM:
        """`rest_until`: streaming, the first event at once and the rest once it is set."""
        calls = tuple(tool_calls or ())
        return self._push(
            Reply(
                text, usage, calls, delay_s, cut_at_limit, searches, until=until,
                rest_until=rest_until,
            )
        )  # fmt: skip

    def fault(
        self,
        status: int = 500,
        retry_after: float | str | None = None,
        *,
        message: str = "scripted fault",
        body: dict[str, Any] | None = None,
        until: threading.Event | None = None,
    ) -> ScriptedLLM:
        """An error status with the provider's error body (and Retry-After);
        `body` sends a real server's own error body verbatim instead;
        `until`: only once it is set."""
        return self._push(Fault(status, retry_after, message, body, until))

    def malformed(self) -> ScriptedLLM:
        return self._push(Malformed())

    def cut_stream(
        self, after_text: str = "", *, reset: bool = False, usage: Usage | None = None
    ) -> ScriptedLLM:
        """Stream `after_text`, then end without the usage (or, with `reset`,
        break the connection); `usage` is what it bills (and what Anthropic's
        `message_start` announces before the cut)."""
        return self._push(CutStream(after_text, reset, usage))

    def stall(self, after_text: str = "", *, seconds: float = 30) -> ScriptedLLM:
        """Stream `after_text`, then send nothing for `seconds`: a call in flight."""
        return self._push(Stall(after_text, seconds))

    def verbatim(
        self,
        *events: bytes,
        reset: bool = False,
        usage: Usage | None = None,
        hold_s: float = 0,
        held: tuple[tuple[int, threading.Event], ...] = (),
    ) -> ScriptedLLM:
        """Stream `events` as given, then end (or, with `reset`, break the
        connection); with `hold_s`, only after holding the stream open that long;
        with `held` (n, gate) pairs, the events from each n-th on once its gate is set."""
        return self._push(Verbatim(tuple(events), reset, usage, hold_s, held))

    def hang(self, seconds: float) -> ScriptedLLM:
        return self._push(Hang(seconds))

    def reset_connection(self) -> ScriptedLLM:
        return self._push(Reset())

    def _push(self, step: Step) -> ScriptedLLM:
        with self._lock:
            self._script.append(step)
        return self

    @property
    def default_reply(self) -> Reply:
        """What an empty script answers: "ok", usage derived from the request."""
        return self._default

    @default_reply.setter
    def default_reply(self, value: Reply | str) -> None:
        self._default = Reply(value) if isinstance(value, str) else value

    @property
    def pending(self) -> int:
        """Scripted steps not yet consumed."""
        with self._lock:
            return len(self._script)

    # what arrived

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies received, in order (faulted requests included)."""
        with self._lock:
            return [r.body for r in self._received]

    @property
    def received(self) -> list[_Received]:
        """Path, headers and body of every request, in order."""
        with self._lock:
            return list(self._received)

    @property
    def billed(self) -> list[Billed]:
        """Every response sent to its last byte, in the order they finished."""
        with self._lock:
            return list(self._billed)

    def _bill(self, billed: Billed) -> None:
        with self._lock:
            self._billed.append(billed)

    def _record(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[Step, int]:
        with self._lock:
            self._received.append(_Received(path, headers, body))
            serial = len(self._received)
            if self._script:
                return self._script.popleft(), serial
            responder = self.responder
        # Outside the lock: a responder may look at what was received.
        return (responder(body, serial) if responder else self._default), serial
