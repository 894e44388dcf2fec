"""The shared HTTP helpers: Retry-After, redaction, SSE, estimates."""

from __future__ import annotations

import email.utils

import pytest
from multidict import CIMultiDict

from plane.providers.http import Events, estimate_tokens, redact, retry_after


def headers(**values: str) -> CIMultiDict[str]:
    """Response headers as aiohttp gives them (names in any case)."""
    return CIMultiDict({name.replace("_", "-"): value for name, value in values.items()})


def test_retry_after_in_every_form():
    now = 1_800_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert retry_after(headers(Retry_After="7")) == 7.0
    assert retry_after(headers(Retry_After="1.5")) == 1.5
    assert retry_after(headers(Retry_After=date), now=now) == 30.0
    assert retry_after(headers(retry_after_ms="250", Retry_After="9")) == 0.25
    assert retry_after(headers(Retry_After="-4")) == 0.0
    assert retry_after(headers(Retry_After="soon")) is None
    assert retry_after(headers(Retry_After="nan")) is None
    assert retry_after(headers()) is None


def test_redact_removes_the_key_and_its_fragments():
    key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345"
    said = f"bad key {key}; also {key[8:20]} and sk-proj-Ab***2345 and Bearer {key[:30]}"
    clean = redact(said, key)
    assert "AbCdEf" not in clean and "2345" not in clean and "MnOp" not in clean
    assert clean.startswith("bad key [redacted]")
    assert redact("rate limited (HTTP 429)", key) == "rate limited (HTTP 429)"


def test_estimates_are_ceil_chars_over_3_5_and_never_zero():
    assert [estimate_tokens(n) for n in (0, 1, 7, 8, 35, 36)] == [1, 1, 2, 3, 10, 11]


class Arriving:
    """A body that arrives in the pieces given (aiohttp's `readany`)."""

    def __init__(self, *pieces: bytes) -> None:
        self.pieces = list(pieces)

    async def readany(self) -> bytes:
        return self.pieces.pop(0) if self.pieces else b""


async def events(*pieces: bytes) -> list[tuple[str, str]]:
    return [pair async for pair in Events(Arriving(*pieces))]


SSE = (
    ": keep-alive\n\nevent: a\ndata: one\ndata: two\n\n\n\ndata:three\r\n\r\n"
    'data: {"text": "€ and \u2028 stay"}\r\rdata: tail'
).encode()
WANTED = [("a", "one\ntwo"), ("", "three"), ("", '{"text": "€ and \u2028 stay"}'), ("", "tail")]


async def test_sse_parser_handles_names_comments_multiline_data_and_every_line_end():
    assert await events(SSE) == WANTED


@pytest.mark.parametrize("cut", range(1, len(SSE)))
async def test_sse_events_are_the_same_wherever_the_body_is_cut(cut: int):
    """A chunk may end anywhere: inside a line, between CR and LF, inside a
    character's UTF-8 bytes."""
    assert await events(SSE[:cut], SSE[cut:]) == WANTED


async def test_sse_events_arrive_as_their_bytes_do():
    body = Events(Arriving(b"data: 1\n\ndata: 2\n", b"\ndata: 3\n\n"))
    assert await anext(body) == ("", "1")
    assert await anext(body) == ("", "2")
    assert await anext(body) == ("", "3")
    with pytest.raises(StopAsyncIteration):
        await anext(body)
