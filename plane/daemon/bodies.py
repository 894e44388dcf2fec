"""Request bodies on the HTTP listener: read only for a client with a key,
and bounded three ways.

- *Each*: a body over `each` bytes gets 413 — at once when its
  Content-Length says so, before a byte of it is read; a chunked one (or one
  aiohttp decompresses) when it passes the limit.
- *In time*: a body must arrive whole within `within_s` of its headers, else
  408; a client that trickles its body holds nothing for long.
- *All together*: the bodies of all calls in flight hold at most `total`
  bytes (a body is held until its call ends, as the gateway reads it). A body
  that would pass that gets 503 with a `Retry-After` (the providers' own
  "overloaded", which clients retry after a pause), before it is read when
  its Content-Length is known.

A refusal is `GatewayRefused`, answered in the API's shape, and the connection then
closes (`plane.daemon.http`): what the client is still sending is never read.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web

from plane.gateway.refused import GatewayRefused

RETRY_AFTER_S = 2
"""How long a client refused for want of room waits before trying again."""


class Bodies:
    def __init__(self, each: int, total: int, within_s: float) -> None:
        self.each = each
        self.total = total
        self.within_s = within_s
        self.held = 0
        """Bytes of the bodies being read or held by their calls, reserved as
        declared (Content-Length) or as read."""

    @asynccontextmanager
    async def read(self, request: web.Request) -> AsyncIterator[bytes]:
        """The whole body, held (and counted) until the block ends."""
        declared = request.content_length or 0
        if declared > self.each:
            raise GatewayRefused(413, self._too_large())
        reserved = self._reserve(declared)
        try:
            buffer = bytearray()
            try:
                async with asyncio.timeout(self.within_s):
                    while chunk := await request.content.readany():
                        if len(buffer) + len(chunk) > self.each:
                            raise GatewayRefused(413, self._too_large())
                        if len(buffer) + len(chunk) > reserved:
                            reserved += self._reserve(len(buffer) + len(chunk) - reserved)
                        buffer += chunk
            except TimeoutError:
                raise GatewayRefused(408, self._too_slow()) from None
            except (ConnectionError, web.RequestPayloadError):
                raise GatewayRefused(
                    400, "The connection closed before the whole request body arrived."
                ) from None
            body = bytes(buffer)
            del buffer
            yield body
        finally:
            self.held -= reserved

    def _reserve(self, size: int) -> int:
        if self.held + size > self.total:
            raise GatewayRefused(
                503,
                f"The plane is holding {self.total >> 20} MiB of other calls' request bodies, "
                f"its most; try again in a moment.",
                {"Retry-After": str(RETRY_AFTER_S)},
            )
        self.held += size
        return size

    def _too_large(self) -> str:
        return f"The request body is over the plane's {self.each >> 20} MiB limit."

    def _too_slow(self) -> str:
        return f"The request body did not arrive whole within {self.within_s:g} s."
