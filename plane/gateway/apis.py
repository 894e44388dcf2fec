"""The APIs gateway clients speak: what a request asks, what a response
used, and how a refusal is said so that the client shows it and stops.

One small seam per API (the shape of `plane.providers`' wire formats), and
`forward.Gateway` drives them all the same way:

- `Messages`: Anthropic's `/v1/messages`. Usage arrives in `message_start`
  (input, cache writes, cache reads) and `message_delta` (output; newer
  servers repeat the input counts there too). Its `input_tokens` excludes the
  cache parts; the plane's `Usage` counts every prompt token (as OpenAI
  does), so they are added up here. Held: 429 `rate_limit_error` with
  Retry-After, which Claude Code prints and does not retry when the wait is
  over a minute.
- `ChatCompletions`: OpenAI's `/v1/chat/completions`. Usage is the final
  chunk of a stream only when `stream_options.include_usage` is set, so the
  gateway always sets it and drops that chunk again for a client that did not
  ask for it (a server that reports the usage so far in every chunk is
  final only once every answer has ended). Held: 400, which Aider,
  OpenHands and Cline do not retry.

A stream is an event a token, so a meter parses only the events that may
say what it reads (`StreamMeter.reads`): the rest go to the client unparsed.

A call that waits only for calls in flight to settle is refused otherwise
(`busy`): 429 with a Retry-After of a few seconds in every API, which each
client retries by itself.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from plane.gateway.asked import Asked, chat_asked, messages_asked, responses_asked
from plane.gateway.compress import (
    Keep,
    chat_results,
    compress_chat,
    compress_messages,
    compress_responses,
    messages_results,
    responses_results,
)
from plane.money.pricing import Variant
from plane.providers.anthropic import hour_writes
from plane.providers.http import token_count
from plane.wire.protocol import Usage

Refusal = tuple[int, dict[str, Any], dict[str, str]]


def _given(data: dict[str, Any], key: str) -> int | None:
    """A token count the usage object states (None: absent, or null); a value
    that is not a count raises `ValueError`: the call's usage is then unknown."""
    value = data.get(key)
    return None if value is None else token_count(value)


@dataclass(frozen=True)
class Bill:
    """What a response says it used: what the provider bills."""

    usage: Usage
    searches: int = 0
    """Web searches a server tool made (billed per search)."""
    response_id: str | None = None
    """The response's id, where a later request may name it (Responses)."""
    variant: Variant = field(default_factory=dict)
    """How the provider says it served the call, where that is billed apart
    (OpenAI's `service_tier`, Anthropic's `speed`)."""
    file_searches: int = 0
    """Searches OpenAI's `file_search` server tool made (billed per call)."""
    containers: tuple[str | None, ...] = ()
    """The containers OpenAI's `code_interpreter` ran code in, by their ids
    (None: one that names none); each is billed once, when it is made."""
    model: str | None = None
    """The model the response says answered (None: it names none), which a
    router may have chosen over the one asked for."""
    written: int = 0
    """The pieces of its answer a stream carried, each at least a token the
    provider wrote and bills: what a stream cut before its usage was
    already shown to have cost."""


MOST_MODEL_CHARS = 256
"""The longest model name a response is taken at: far past any provider's,
and bounded, since the ledger keeps it."""


def model_named(data: dict[str, Any]) -> str | None:
    """The model a response (or its first event) names, if it names one: a
    printable name of at most `MOST_MODEL_CHARS` (the ledger keeps it, and
    `plane ledger` prints it to a terminal, where a control character would
    be the upstream's to play)."""
    value = data.get("model")
    if isinstance(value, str) and 0 < len(value) <= MOST_MODEL_CHARS and value.isprintable():
        return value
    return None


def said(data: dict[str, Any], key: str) -> dict[str, str]:
    """`{key: value}` when `data` names one (a price variant), else nothing."""
    value = data.get(key)
    return {key: value} if isinstance(value, str) and value else {}


@dataclass
class StreamMeter:
    """What a stream used, read event by event; `done` once its usage is final.
    Before that, `usage` is what the provider has announced so far (Anthropic
    states the prompt's tokens in its first event): what a stream cut short
    is charged at least. A usage that is not counts (a string, a negative)
    makes the stream's usage unknown for good: never `done`, it is charged as
    a stream that ended before its usage, never at what could be read of it."""

    usage: Usage = field(default_factory=Usage)
    done: bool = False
    searches: int = 0
    response_id: str | None = None
    variant: Variant = field(default_factory=dict)
    unreadable: bool = False
    file_searches: int = 0
    containers: tuple[str | None, ...] = ()
    model: str | None = None
    ended: bool = False
    """The stream's last event by its protocol has come (Anthropic's
    `message_stop`, Chat Completions' `data: [DONE]`, Responses' final
    event): nothing follows it, whether or not the upstream closes."""
    written: int = 0
    """Events that carried a piece of the answer (`piece`): the provider
    wrote at least a token for each, and bills it."""
    errored: bool = False
    """The provider's stream said it failed (an error event) before it
    started: set only by the meter of an API whose provider documents that
    it bills a failed request nothing (Anthropic's)."""

    reads: ClassVar[tuple[bytes, ...]] = ()
    """What every event this meter reads anything from has in it (a key, an
    event's type); empty: every event is parsed."""
    pieces: ClassVar[tuple[bytes, re.Pattern[bytes]] | None] = None
    """What an event that carries a piece of the answer has in it: its kind
    (a mark), and a delta of text, thinking or a tool call's arguments
    that is not empty (a pattern, looked for only where the mark is)."""

    @property
    def failed(self) -> bool:
        """The provider failed the call before it started: an error before it
        announced any usage or wrote any piece of the answer, which it bills
        nothing for. Anything announced or written, and the call is charged
        as a stream cut short is: unknown never means free."""
        return self.errored and not self.done and self.written == 0 and self.usage == Usage()

    def event(self, event: bytes) -> bool:
        """Read one server-sent event; return whether the client should see it."""
        if self.pieces is not None and self.pieces[0] in event and self.pieces[1].search(event):
            self.written += 1
        if self.passes(event):
            return True
        if b"[DONE]" in event and _said_done(event):
            self.ended = True
            return True
        data = event_data(event)
        if data is None:
            return True
        return self.read(data)

    def passes(self, event: bytes) -> bool:
        """Whether `event` can change nothing this meter reads: sent on
        unparsed. Never one with the bytes JSON may spell a name in other
        ways with (an escape, `\\`; another encoding, NULs), nor OpenAI's
        end (`[DONE]`)."""
        reads = self.reads
        if not reads or b"\\" in event or b"\x00" in event or b"[DONE]" in event:
            return False
        return not any(mark in event for mark in reads)

    def read(self, event: dict[str, Any]) -> bool:
        """Read one event; return whether the client should see it."""
        try:
            shown = self.feed(event)
        except ValueError:
            self.unreadable, shown = True, True
        if self.unreadable:
            self.done = False
        return shown

    def feed(self, event: dict[str, Any]) -> bool:
        """Read one event (`ValueError`: its usage is not counts); return
        whether the client should see it."""
        raise NotImplementedError

    @property
    def bill(self) -> Bill:
        used = (self.file_searches, self.containers, self.model, self.written)
        return Bill(self.usage, self.searches, self.response_id, self.variant, *used)

    @property
    def announced(self) -> bool:
        """The provider has stated the prompt's tokens (and the answer is not done)."""
        return not self.done and self.usage.input_tokens > 0


class Wire:
    name: str
    path: str
    """Where the client sends it, and where the upstream is asked."""
    upstream_kind: str
    """The provider kind (agents.yaml) that speaks it."""

    def asked(self, body: dict[str, Any]) -> Asked:
        """What the request asks for, as far as its cost goes."""
        raise NotImplementedError

    def upstream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        return body

    def bill_of(self, response: dict[str, Any]) -> Bill | None:
        """What a whole response used; None when it says nothing of it, or
        nothing the plane can read (its usage is not counts): it is unknown."""
        try:
            return self.usage_of(response)
        except ValueError:
            return None

    def usage_of(self, response: dict[str, Any]) -> Bill | None:
        """`bill_of`, raising `ValueError` on a usage that is not counts."""
        raise NotImplementedError

    def compressed(self, body: dict[str, Any], keep: Keep) -> tuple[dict[str, Any], int]:
        """The request with its tool results compressed, and the chars saved."""
        raise NotImplementedError

    def has_results(self, body: dict[str, Any]) -> bool:
        """Whether the request carries a tool result: one that carries none
        has nothing to compress, and is not handed to a thread for it."""
        raise NotImplementedError

    def meter(self, body: dict[str, Any]) -> StreamMeter:
        raise NotImplementedError

    def error(self, status: int, message: str) -> dict[str, Any]:
        raise NotImplementedError

    def listing(self, models: list[str]) -> dict[str, Any]:
        """`/v1/models`, in this API's shape."""
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "plane"} for m in models]
        return {"object": "list", "data": data}

    def held(self, notice: str, retry_after_s: int, code: str = "daily_ceiling_reached") -> Refusal:
        """Status, body and headers of the refusal of a held agent's call;
        `retry_after_s` is the seconds to 00:00 UTC (or, held in a loop, a long
        wait: the operator lifts it); `code`, why, where the API has codes."""
        raise NotImplementedError

    def busy(self, notice: str, retry_after_s: int) -> Refusal:
        """The refusal of a call that waited for calls in flight, which may
        go once they settle: a 429 the client retries after `retry_after_s`."""
        return 429, self.error(429, notice), {"Retry-After": str(retry_after_s)}


def _anthropic_usage(data: dict[str, Any], before: Usage) -> Usage:
    """Anthropic's usage object over what was already known. Its counts are
    cumulative: a delta may repeat some, carry only the output, or (some
    servers speaking the API) say 0 for the prompt it announced at the start,
    and no count is taken below what was already known."""
    uncached = before.input_tokens - before.cache_read_tokens - before.cache_write_tokens
    uncached = max(uncached, _given(data, "input_tokens") or 0)
    cache_read = max(before.cache_read_tokens, _given(data, "cache_read_input_tokens") or 0)
    written = _given(data, "cache_creation_input_tokens")
    cache_write = max(before.cache_write_tokens, written or 0)
    hour = before.cache_write_1h_tokens
    if written is not None or "cache_creation" in data:
        hour = max(hour, hour_writes(data, cache_write))
    output = max(before.output_tokens, _given(data, "output_tokens") or 0)
    return Usage(
        input_tokens=uncached + cache_read + cache_write,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        cache_write_1h_tokens=min(hour, cache_write),
        output_tokens=output,
    )


def _web_searches(usage: dict[str, Any]) -> int | None:
    """Anthropic's count of a server tool's web searches (None: not in this object)."""
    tools = usage.get("server_tool_use")
    return _given(tools, "web_search_requests") if isinstance(tools, dict) else None


class _MessagesMeter(StreamMeter):
    """Anthropic's stream. An `error` event before its `message_start` (an
    `overloaded_error`, which Claude Code retries) is a failed request,
    which Anthropic bills nothing: "In general, failed requests are not
    charged, and you will only be billed for successful API calls and
    completed tasks" (support.claude.com, "How will I be billed for Claude
    API use?")."""

    reads = (b"message_start", b"message_delta", b"message_stop", b'"error"')
    pieces = (b"content_block_delta", re.compile(rb'"(?:text|thinking|partial_json)"\s*:\s*"[^"]'))
    started: bool = False

    def feed(self, event: dict[str, Any]) -> bool:
        kind = event.get("type")
        self.errored = self.errored or (kind == "error" and not self.started)
        self.started = self.started or kind == "message_start"
        usage: Any = None
        if kind == "message_start" and isinstance(event.get("message"), dict):
            usage = event["message"].get("usage")
            self.model = model_named(event["message"]) or self.model
        elif kind == "message_delta":
            usage = event.get("usage")
        if isinstance(usage, dict):
            self.usage = _anthropic_usage(usage, self.usage)
            self.searches = _web_searches(usage) or self.searches
            self.variant = said(usage, "speed") or self.variant
            self.done = self.done or kind == "message_delta"
        self.ended = self.ended or kind == "message_stop"
        return True


class Messages(Wire):
    name = "Anthropic Messages"
    path = "/v1/messages"
    upstream_kind = "anthropic"

    def asked(self, body: dict[str, Any]) -> Asked:
        return messages_asked(body)

    def usage_of(self, response: dict[str, Any]) -> Bill | None:
        usage = response.get("usage")
        if not isinstance(usage, dict):
            return None
        searches = _web_searches(usage) or 0
        used = _anthropic_usage(usage, Usage())
        return Bill(used, searches, variant=said(usage, "speed"), model=model_named(response))

    def meter(self, body: dict[str, Any]) -> StreamMeter:
        return _MessagesMeter()

    def compressed(self, body: dict[str, Any], keep: Keep) -> tuple[dict[str, Any], int]:
        return compress_messages(body, keep)

    def has_results(self, body: dict[str, Any]) -> bool:
        return messages_results(body)

    def error(self, status: int, message: str) -> dict[str, Any]:
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            404: "not_found_error",
            429: "rate_limit_error",
        }.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def held(self, notice: str, retry_after_s: int, code: str = "daily_ceiling_reached") -> Refusal:
        return 429, self.error(429, notice), {"Retry-After": str(retry_after_s)}

    def listing(self, models: list[str]) -> dict[str, Any]:
        made = "2025-01-01T00:00:00Z"  # the API requires a date; the plane has none to give
        data = [{"type": "model", "id": m, "display_name": m, "created_at": made} for m in models]
        first, last = (models[0], models[-1]) if models else (None, None)
        return {"data": data, "has_more": False, "first_id": first, "last_id": last}


def _detail(data: dict[str, Any], details: str, key: str) -> int:
    """A count a usage object states in its `details` object (0: none)."""
    inner = data.get(details)
    return (_given(inner, key) if isinstance(inner, dict) else None) or 0


def _openai_usage(data: dict[str, Any]) -> Usage:
    """Chat Completions' usage; the audio tokens (its audio models') are
    parts of the prompt's and the answer's, billed at rates of their own."""
    cached = _detail(data, "prompt_tokens_details", "cached_tokens")
    prompt = _given(data, "prompt_tokens") or 0
    return Usage(
        input_tokens=max(prompt, cached),
        cache_read_tokens=cached,
        output_tokens=_given(data, "completion_tokens") or 0,  # reasoning tokens are part of it
        input_audio_tokens=_detail(data, "prompt_tokens_details", "audio_tokens"),
        output_audio_tokens=_detail(data, "completion_tokens_details", "audio_tokens"),
    )


class _ChatMeter(StreamMeter):
    reads = (b'"usage"', b'"service_tier"')
    pieces = (
        b'"delta"',
        re.compile(rb'"(?:content|arguments|reasoning_content|reasoning)"\s*:\s*"[^"]'),
    )

    def __init__(self, client_asked: bool) -> None:
        super().__init__()
        self._client_asked = client_asked

    def passes(self, event: bytes) -> bool:
        # Every chunk names the model, and the first that does is kept.
        return self.model is not None and super().passes(event)

    def feed(self, event: dict[str, Any]) -> bool:
        self.variant = said(event, "service_tier") or self.variant
        self.model = self.model or model_named(event)  # each chunk names it; the first kept
        usage = event.get("usage")
        if isinstance(usage, dict):
            self.usage = _openai_usage(usage)
            # Final on the chunk that carries only usage, or ends every answer; a
            # server may report the usage so far in every chunk (vLLM's
            # `continuous_usage_stats`): a stream cut then is not paid for by it.
            choices = event.get("choices")
            self.done = self.done or not choices or _all_finished(choices)
            # The chunk that only carries usage goes to a client that asked for it.
            return self._client_asked or bool(choices)
        return True


def _all_finished(choices: Any) -> bool:
    """Every answer of a chunk says why it ended (`finish_reason`)."""
    listed = choices if isinstance(choices, list) else []
    return all(isinstance(c, dict) and c.get("finish_reason") for c in listed)


def _asked_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


class ChatCompletions(Wire):
    name = "OpenAI Chat Completions"
    path = "/v1/chat/completions"
    upstream_kind = "openai-compatible"

    def asked(self, body: dict[str, Any]) -> Asked:
        return chat_asked(body)

    def upstream_body(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("stream") or _asked_usage(body):
            return body
        options = body.get("stream_options")
        options = dict(options) if isinstance(options, dict) else {}
        return {**body, "stream_options": {**options, "include_usage": True}}

    def usage_of(self, response: dict[str, Any]) -> Bill | None:
        usage = response.get("usage")
        if not isinstance(usage, dict):
            return None
        served, model = said(response, "service_tier"), model_named(response)
        return Bill(_openai_usage(usage), variant=served, model=model)

    def meter(self, body: dict[str, Any]) -> StreamMeter:
        return _ChatMeter(_asked_usage(body))

    def compressed(self, body: dict[str, Any], keep: Keep) -> tuple[dict[str, Any], int]:
        return compress_chat(body, keep)

    def has_results(self, body: dict[str, Any]) -> bool:
        return chat_results(body)

    def error(self, status: int, message: str) -> dict[str, Any]:
        kind = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(
            status, "invalid_request_error"
        )
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}

    def held(self, notice: str, retry_after_s: int, code: str = "daily_ceiling_reached") -> Refusal:
        body = self.error(400, notice)
        body["error"]["code"] = code
        return 400, body, {}


def _responses_usage(data: dict[str, Any]) -> Usage:
    details = data.get("input_tokens_details")
    cached = (_given(details, "cached_tokens") if isinstance(details, dict) else None) or 0
    return Usage(
        input_tokens=max(_given(data, "input_tokens") or 0, cached),
        cache_read_tokens=cached,
        output_tokens=_given(data, "output_tokens") or 0,  # reasoning tokens are part of it
    )


FINAL_RESPONSE_EVENTS = ("response.completed", "response.incomplete", "response.failed")


def _output_items(response: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """A response's output items of type `kind` (a server tool's calls)."""
    output = response.get("output")
    items = output if isinstance(output, list) else []
    return [i for i in items if isinstance(i, dict) and i.get("type") == kind]


def _containers(response: dict[str, Any]) -> tuple[str | None, ...]:
    """The containers a response's code ran in: each `container_id` its
    `code_interpreter_call` items name, once, and None for each that names none."""
    named: list[str | None] = []
    for item in _output_items(response, "code_interpreter_call"):
        container = item.get("container_id")
        if not isinstance(container, str) or not container:
            named.append(None)
        elif container not in named:
            named.append(container)
    return tuple(named)


def _responses_bill(response: dict[str, Any]) -> Bill | None:
    usage = response.get("usage")
    if not isinstance(usage, dict):
        return None
    found = response.get("id")
    found = found if isinstance(found, str) else None
    served = said(response, "service_tier")
    searched = len(_output_items(response, "web_search_call"))
    file_searches = len(_output_items(response, "file_search_call"))
    used = _responses_usage(usage)
    return Bill(
        used, searched, found, served, file_searches, _containers(response), model_named(response)
    )


class _ResponsesMeter(StreamMeter):
    reads = (b'"response"',)
    pieces = (b".delta", re.compile(rb'"delta"\s*:\s*"[^"]'))

    def feed(self, event: dict[str, Any]) -> bool:
        response = event.get("response")
        if not isinstance(response, dict):
            return True
        if isinstance(response.get("id"), str):
            self.response_id = response["id"]
        self.model = model_named(response) or self.model
        final = event.get("type") in FINAL_RESPONSE_EVENTS
        if final and (bill := _responses_bill(response)):
            self.usage, self.searches, self.done = bill.usage, bill.searches, True
            self.variant = bill.variant
            self.file_searches, self.containers = bill.file_searches, bill.containers
        self.ended = self.ended or final
        return True


class Responses(Wire):
    """OpenAI's `/v1/responses` (Codex). Usage arrives in the final
    `response.completed` event. Held: a 400, as for Chat Completions, which
    Codex prints (the plane's sentence in it) and does not retry."""

    name = "OpenAI Responses"
    path = "/v1/responses"
    upstream_kind = "openai-compatible"

    def asked(self, body: dict[str, Any]) -> Asked:
        return responses_asked(body)

    def usage_of(self, response: dict[str, Any]) -> Bill | None:
        return _responses_bill(response)

    def meter(self, body: dict[str, Any]) -> StreamMeter:
        return _ResponsesMeter()

    def compressed(self, body: dict[str, Any], keep: Keep) -> tuple[dict[str, Any], int]:
        return compress_responses(body, keep)

    def has_results(self, body: dict[str, Any]) -> bool:
        return responses_results(body)

    def error(self, status: int, message: str) -> dict[str, Any]:
        return ChatCompletions().error(status, message)

    def held(self, notice: str, retry_after_s: int, code: str = "daily_ceiling_reached") -> Refusal:
        # Not Codex's own `usage_limit_reached`: for that it prints a sentence
        # of its own ("You've hit your usage limit…") and drops the plane's.
        # A 400 it neither retries nor rewrites: it prints the body, the
        # plane's sentence in it, and exits.
        return ChatCompletions().held(notice, retry_after_s, code)


WIRES: dict[str, Wire] = {w.path: w for w in (Messages(), ChatCompletions(), Responses())}


def sse_events(buffer: bytearray) -> list[bytes]:
    """Take the complete server-sent events off the front of `buffer`."""
    events: list[bytes] = []
    while True:
        normalised = buffer.replace(b"\r\n", b"\n")
        if len(normalised) != len(buffer):
            buffer[:] = normalised
        end = buffer.find(b"\n\n")
        if end < 0:
            return events
        events.append(bytes(buffer[: end + 2]))
        del buffer[: end + 2]


def _said_done(event: bytes) -> bool:
    """The event is OpenAI's end of a stream, `data: [DONE]`."""
    lines = [line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:")]
    return lines == [b"[DONE]"]


def event_data(event: bytes) -> dict[str, Any] | None:
    """The JSON of an event's `data:` lines; None for `[DONE]`, pings without data, junk."""
    lines = [line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:")]
    if not lines:
        return None
    try:
        data = json.loads(b"\n".join(lines))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
