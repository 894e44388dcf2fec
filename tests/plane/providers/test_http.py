"""The shared HTTP helpers: Retry-After, redaction, SSE, estimates."""

from __future__ import annotations

import email.utils

import httpx

from plane.providers.http import estimate_tokens, redact, retry_after, sse_events


def test_retry_after_in_every_form():
    now = 1_800_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert retry_after(httpx.Headers({"retry-after": "7"})) == 7.0
    assert retry_after(httpx.Headers({"retry-after": "1.5"})) == 1.5
    assert retry_after(httpx.Headers({"retry-after": date}), now=now) == 30.0
    assert retry_after(httpx.Headers({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert retry_after(httpx.Headers({"retry-after": "-4"})) == 0.0
    assert retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after(httpx.Headers({"retry-after": "nan"})) is None
    assert retry_after(httpx.Headers({})) is None


def test_redact_removes_the_key_and_its_fragments():
    key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345"
    said = f"bad key {key}; also {key[8:20]} and sk-proj-Ab***2345 and Bearer {key[:30]}"
    clean = redact(said, key)
    assert "AbCdEf" not in clean and "2345" not in clean and "MnOp" not in clean
    assert clean.startswith("bad key [redacted]")
    assert redact("rate limited (HTTP 429)", key) == "rate limited (HTTP 429)"


def test_estimates_are_ceil_chars_over_3_5_and_never_zero():
    assert [estimate_tokens(n) for n in (0, 1, 7, 8, 35, 36)] == [1, 1, 2, 3, 10, 11]


async def test_sse_parser_handles_names_comments_and_multiline_data():
    body = b": keep-alive\n\nevent: a\ndata: one\ndata: two\n\ndata:three\n\ndata: tail"
    response = httpx.Response(200, content=body)
    got = [pair async for pair in sse_events(response)]
    assert got == [("a", "one\ntwo"), ("", "three"), ("", "tail")]
