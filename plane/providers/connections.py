"""The providers' connections: aiohttp's pool, set for calls that are bounded
already, and the TLS context, made once a process.

aiohttp's connector keeps each origin's idle connections in a queue: a call
takes the next one (looked at once, by the clock and whether its socket is
still open: dropped if it is past `KEEPALIVE_S` or the server closed it), or
opens one. What a call costs does not grow with the connections held, and a
sweep every `KEEPALIVE_S` closes the idle ones a quieter hour leaves behind.
Nothing caps the calls in flight: they are bounded already, one turn at a
time per agent.

A response gives its connection back the moment its body's end is received,
read by its reader or not (aiohttp's parser sees the end); a response
released before its end loses its connection (`plane.providers.http.drain`).

`Connect` is the seam: what a provider's client connects with. The network
by default; a test hands a `aiohttp.UnixConnector` on which a local server
answers every URL (it sees the URL's host and path, with no TLS).
"""

from __future__ import annotations

import functools
import json
import os
import ssl
from collections.abc import Callable
from typing import Any

import aiohttp
import certifi
import orjson

KEEPALIVE_S = 5.0
"""How long an idle connection is kept for the next call."""

Connect = Callable[[], aiohttp.BaseConnector]
"""Makes a client's connector when the client is made (a connector belongs to
the one session that closes it)."""


@functools.cache
def tls_context() -> ssl.SSLContext:
    """A verifying context, made once a process (loading the CA bundle takes
    ~45 ms, and one context serves every connection): `SSL_CERT_FILE` or
    `SSL_CERT_DIR` when set, else certifi's bundle, as httpx chooses (a
    minimal system may have no CA store of its own)."""
    if cafile := os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=cafile)
    if capath := os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=capath)
    return ssl.create_default_context(cafile=certifi.where())


def network() -> aiohttp.TCPConnector:
    """TCP, TLS verified, no cap on connections, idle ones kept `KEEPALIVE_S`."""
    return aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEPALIVE_S, ssl=tls_context())


def session(
    connect: Connect | None,
    timeout: aiohttp.ClientTimeout,
    headers: dict[str, str] | None = None,
    middlewares: tuple[aiohttp.ClientMiddlewareType, ...] = (),
) -> aiohttp.ClientSession:
    """A client on `connect` (the network by default) that keeps no cookies
    (an API call needs none, and a jar is read on every request)."""
    return aiohttp.ClientSession(
        connector=(connect or network)(),
        timeout=timeout,
        headers=headers,
        cookie_jar=aiohttp.DummyCookieJar(),
        middlewares=middlewares,
    )


def json_body(value: Any) -> bytes:
    """A request's JSON, compact and UTF-8 (as httpx wrote it). orjson's: a
    call's body carries its whole history, and the standard library's
    encoder took ~40 times as long (~0.24 ms a call at 300 messages, a
    seventh of a metered call's CPU). What orjson does not take (a key that
    is not a string, an integer past 64 bits) goes to the standard library,
    which writes it or says why not; a float that is not a number is sent as
    null (no provider's API has one)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(
            value, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ).encode()
