"""What both wire protocols share: the pooled client, retries, SSE, estimates.

When a call is retried, and when it is not:

    before any response      connect error, timeout, reset    retried
    a response, 429 / 5xx    (also 408, 409)                  retried, honouring Retry-After
    a response, other 4xx    bad key, bad request             not retried: the same call fails again
    a 200 that breaks        unreadable body, stream cut      not retried: the provider may bill it

Retries wait with exponential backoff and jitter, or exactly as long as
Retry-After asks; they stop at `max_retries` or when the next wait would
exceed the budget. The sleep is injectable, so tests do not wait.

A server may close a pooled keep-alive connection just as the next request
goes out on it (llama.cpp does after some streams); that one failure is
retried at once without spending a retry.

Every error is one sentence that names the provider and never contains the
API key, nor anything in a provider's message that looks like one.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import email.utils
import json
import math
import random
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp
from yarl import URL

from plane.errors import ContextOverflow, ProviderError
from plane.providers import connections
from plane.providers.base import BrokenReply, CompletionRequest
from plane.wire.protocol import Usage

Sleep = Callable[[float], Awaitable[None]]

RETRIED_STATUS = frozenset({408, 409, 429})


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 16.0
    budget_s: float = 60.0
    """The most a call waits between its attempts, in total."""
    sleep: Sleep = asyncio.sleep
    jitter: Callable[[], float] = field(default=random.random)
    """A number in [0, 1); the backoff is scaled by 1 - jitter/4."""

    def backoff(self, retry: int) -> float:
        """The wait before retry number `retry` (0-based), without Retry-After."""
        cap = min(self.max_delay_s, self.base_delay_s * 2.0**retry)
        return cap * (1 - self.jitter() / 4)


def retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms` (OpenAI),
    `Retry-After` as seconds or as an HTTP date; None if absent or unreadable."""
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value).timestamp()
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when - (time.time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None


def timeouts(timeout_s: float) -> aiohttp.ClientTimeout:
    """`timeout_s` for each read (between stream chunks too); connecting gets
    less; no bound on the whole call (a long answer streams for as long as it
    keeps streaming)."""
    return aiohttp.ClientTimeout(total=None, connect=min(10.0, timeout_s), sock_read=timeout_s)


# ── keeping secrets out of sentences ────────────────────────────────────────

_KEYLIKE = re.compile(
    r"\b(?:sk|pk|key|tok|api)[-_][A-Za-z0-9*_.\-]{4,}"  # sk-proj-…, key_…
    r"|[A-Za-z0-9_\-]{32,}"  # any long token
    r"|\S*\*{3,}\S*"  # a masked key, sk-ab****wxyz
)


def redact(text: str, secret: str | None) -> str:
    """`text` without the key, any long fragment of it, or anything key-like."""
    if secret:
        text = text.replace(secret, "[redacted]")
        for size in range(min(len(secret), 40), 7, -1):
            for start in range(0, len(secret) - size + 1):
                piece = secret[start : start + size]
                if piece in text:
                    text = text.replace(piece, "[redacted]")
    return _KEYLIKE.sub("[redacted]", text)


def error_message(body: bytes) -> str:
    """The provider's own words from an error body, short, if it has any."""
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    if not isinstance(message, str):
        return ""
    message = " ".join(message.split()).rstrip(".")
    return message[:160] + ("…" if len(message) > 160 else "")


_OVERFLOW_KINDS = frozenset({"exceed_context_size_error", "context_length_exceeded"})
_OVERFLOW_WORDS = re.compile(
    r"exceeds? (?:the )?(?:available )?context|maximum context length|prompt is too long"
    r"|context[ _]length[ _]exceeded",
    re.IGNORECASE,
)


def is_context_overflow(status: int, body: bytes) -> bool:
    """Whether a refusal says the prompt is longer than the model's context:
    llama.cpp's `exceed_context_size_error`, OpenAI's `context_length_exceeded`
    (both 400), Anthropic's 400 "prompt is too long", or any 400/413 whose
    words say so (vLLM, Ollama, OpenRouter word it their own way)."""
    if status not in (400, 413):
        return False
    try:
        data = json.loads(body)
    except ValueError:
        return bool(_OVERFLOW_WORDS.search(body.decode("utf-8", "replace")))
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        kinds = {str(error.get("type", "")), str(error.get("code", ""))}
        if kinds & _OVERFLOW_KINDS:
            return True
        return bool(_OVERFLOW_WORDS.search(str(error.get("message", ""))))
    return bool(_OVERFLOW_WORDS.search(str(error or "")))


# ── the caller ──────────────────────────────────────────────────────────────


class HttpCaller:
    """One pooled `aiohttp.ClientSession` and the retry loop around it.

    The session is made at the first call (aiohttp makes it on a running
    loop; a provider is built before), and closed by `aclose()`."""

    def __init__(
        self,
        name: str,
        *,
        base_url: str,
        headers: Mapping[str, str],
        secret: str | None,
        key_env: str | None,
        timeout_s: float,
        retry: RetryPolicy,
        connect: connections.Connect | None = None,
        middlewares: Sequence[aiohttp.ClientMiddlewareType] = (),
    ) -> None:
        self.name = name
        self.retry = retry
        self.base_url = base_url.rstrip("/")
        self.host = URL(self.base_url).host or self.base_url
        self._secret = secret
        self._key_env = key_env
        self._headers = {**headers, "content-type": "application/json"}
        self._timeout = timeouts(timeout_s)
        self._connect = connect
        self._middlewares = tuple(middlewares)
        self._session: aiohttp.ClientSession | None = None
        self._urls: dict[str, URL] = {}

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()

    def fail(self, sentence: str, kind: type[ProviderError] = ProviderError) -> ProviderError:
        return kind(redact(f"{self.name}: {sentence}", self._secret))

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = connections.session(
                self._connect, self._timeout, self._headers, self._middlewares
            )
        return self._session

    def _url(self, path: str) -> URL:
        """The URL of `path`, parsed once."""
        url = self._urls.get(path)
        if url is None:
            url = self._urls[path] = URL(self.base_url + path)
        return url

    async def open(self, path: str, body: dict[str, Any] | bytes) -> aiohttp.ClientResponse:
        """POST `body` (bytes: its JSON, written already) and return the
        response once its status is good, with the body not yet read (the
        caller reads it, then releases it)."""
        data = body if isinstance(body, bytes) else connections.json_body(body)
        client, url = self._client(), self._url(path)
        retries = 0
        waited = 0.0
        fresh_connection_retry = True
        while True:
            try:
                response = await client.post(url, data=data, allow_redirects=False)
            except aiohttp.ServerDisconnectedError as exc:
                if fresh_connection_retry:
                    fresh_connection_retry = False
                    continue
                failure, wait = self.transport_failure(exc), None
            except aiohttp.ClientError as exc:
                failure, wait = self.transport_failure(exc), None
            else:
                if response.status < 300:
                    return response
                failure, wait = await self._status_failure(response)
            delay = self.retry.backoff(retries) if wait is None else wait
            if retries >= self.retry.max_retries or waited + delay > self.retry.budget_s:
                tries = retries + 1
                raise self.fail(f"{failure} ({tries} attempt{'s' if tries > 1 else ''}).")
            await self.retry.sleep(delay)
            waited += delay
            retries += 1

    def transport_failure(self, exc: aiohttp.ClientError) -> str:
        if isinstance(exc, aiohttp.ConnectionTimeoutError):
            return f"timed out connecting to {self.host}"
        if isinstance(exc, TimeoutError):
            return f"timed out waiting to {self.host}"
        if isinstance(exc, aiohttp.ClientConnectorError):
            return f"could not connect to {self.host}"
        return f"the connection to {self.host} broke"

    async def _status_failure(self, response: aiohttp.ClientResponse) -> tuple[str, float | None]:
        """What went wrong and how long the server asks us to wait; raises at
        once if the status is not worth retrying."""
        try:
            body = await response.read()
        except aiohttp.ClientError:
            body = b""
        finally:
            response.release()
        status = response.status
        said = error_message(body)
        detail = f": {said}" if said else ""
        if status in (401, 403):
            # Not the provider's words: they often quote part of the key.
            where = f" (from {self._key_env})" if self._key_env else ""
            raise self.fail(f"the API key{where} was refused (HTTP {status}).")
        if is_context_overflow(status, body):
            raise self.fail(
                f"the prompt is longer than the model's context (HTTP {status}{detail}).",
                ContextOverflow,
            )
        if status not in RETRIED_STATUS and status < 500:
            raise self.fail(f"the request was refused (HTTP {status}{detail}).")
        what = "rate limited" if status == 429 else "the server failed"
        return f"{what} (HTTP {status}{detail})", retry_after(response.headers)

    async def read_json(self, response: aiohttp.ClientResponse, estimate: Usage) -> dict[str, Any]:
        """The whole body of a good response as a JSON object. A body that
        breaks off or is not JSON raises `BrokenReply` carrying `estimate`."""
        try:
            raw = await response.read()
        except aiohttp.ClientError as exc:
            raise self.broken(f"{self.transport_failure(exc)} mid-reply.", estimate) from None
        finally:
            response.release()
        try:
            data = json.loads(raw)
        except ValueError:
            raise self.broken("the reply was not valid JSON.", estimate) from None
        if not isinstance(data, dict):
            raise self.broken("the reply was not a JSON object.", estimate)
        return data

    def broken(self, sentence: str, estimate: Usage) -> BrokenReply:
        error = self.fail(sentence, BrokenReply)
        assert isinstance(error, BrokenReply)
        error.usage = estimate
        return error


# ── server-sent events ──────────────────────────────────────────────────────


class Chunks(Protocol):
    """A body as it arrives (aiohttp's `StreamReader`)."""

    async def readany(self) -> bytes:
        """What has arrived (waiting for something if nothing has); b"" at the end."""
        ...


class Events:
    """The (event, data) pairs of an SSE stream as they arrive; `event` is ""
    when unnamed. Each chunk read is split into whole events at once, so an
    event already received is taken with no wait.

    Lines end in LF, CRLF or CR; a comment line is skipped; an event's data
    lines are joined with LF; what the stream's end cuts short is dispatched
    as it stands. Iterating it raises aiohttp's errors when the body breaks."""

    def __init__(self, body: Chunks) -> None:
        self._body = body
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = ""
        """Text after the last blank line: an event still arriving."""
        self._ready: deque[tuple[str, str]] = deque()
        self._ended = False

    def __aiter__(self) -> Events:
        return self

    async def __anext__(self) -> tuple[str, str]:
        ready = self._ready
        while not ready:
            if self._ended:
                raise StopAsyncIteration
            self._feed(await self._body.readany())
        return ready.popleft()

    def _feed(self, chunk: bytes) -> None:
        if chunk:
            text = self._pending + self._decoder.decode(chunk)
        else:  # the end: it ends the last event too
            text = self._pending + self._decoder.decode(b"", final=True) + "\n\n"
            self._ended = True
        if "\r" in text:
            held = "\r" if text.endswith("\r") and not self._ended else ""
            text = text[: len(text) - len(held)].replace("\r\n", "\n").replace("\r", "\n")
            blocks = text.split("\n\n")
            blocks[-1] += held  # a CR whose LF may come next
        else:
            blocks = text.split("\n\n")
        self._pending = blocks.pop()
        for block in blocks:
            if block.startswith("data: ") and "\n" not in block:
                self._ready.append(("", block[6:]))  # most events: one data line
            else:
                self._lines(block.split("\n"))

    def _lines(self, lines: list[str]) -> None:
        event = ""
        data: list[str] = []
        for line in lines:
            if not line:
                if data:
                    self._ready.append((event, "\n".join(data)))
                event, data = "", []
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if name == "event":
                    event = value
                elif name == "data":
                    data.append(value)
        if data:
            self._ready.append((event, "\n".join(data)))


DRAIN_S = 1.0
"""How long a stream may take to end after its last event."""


async def drain(response: aiohttp.ClientResponse) -> None:
    """Read a stream to its end after its last event, within `DRAIN_S`.

    The body's end must be received for the connection to go back to the
    pool; a response released before it loses its connection, and each call
    then opens a new one (against a real provider, a TLS handshake per
    call). What still arrives is not an answer: it is ignored.

    When the end has already arrived (usually, as a provider sends its last
    event and the terminating chunk together), the connection is back in
    the pool already and there is nothing to wait for: no timer is set, so
    a loop running late (1,000 agents) cannot throw the connection away."""
    content = response.content
    if content.is_eof():
        return
    with contextlib.suppress(TimeoutError, aiohttp.ClientError):
        async with asyncio.timeout(DRAIN_S):
            while await content.readany():
                pass


# ── estimates, for calls whose usage never came back ────────────────────────


def estimate_tokens(chars: int) -> int:
    """ceil(chars / 3.5), never zero: chars / 4 undercounts code and JSON."""
    return max(1, -(-chars * 2 // 7))


def prompt_chars(request: CompletionRequest) -> int:
    chars = len(request.system)
    for message in request.messages:
        chars += len(message.content)
        chars += sum(len(c.name) + len(c.arguments) for c in message.tool_calls)
    for tool in request.tools:
        chars += len(tool.name) + len(tool.description) + len(json.dumps(tool.parameters))
    return chars


def estimate_usage(request: CompletionRequest, output_chars: int = 0) -> Usage:
    return Usage(
        input_tokens=estimate_tokens(prompt_chars(request)),
        output_tokens=estimate_tokens(output_chars),
    )


MOST_TOKENS = 10**9
"""More tokens than any call reads or writes (a context window is at most
millions): a count past it is not one, and no ledger row could hold it."""


def token_count(value: Any) -> int:
    """A token count from a provider's usage; anything odd is a reply error."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MOST_TOKENS:
        raise ValueError(f"not a token count: {value!r}")
    return value
