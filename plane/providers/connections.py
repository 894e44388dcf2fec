"""The providers' connection pool: what a call costs does not grow with the
connections held.

httpcore's own pool, on every request and every response closed, looks at
each connection it holds (and asks each idle one's socket whether the server
closed it) and, for each request waiting, at each connection again. With a
connection per agent in flight, 100 agents spent more CPU there than in the
rest of the call. This pool keeps the idle connections of each origin on a
stack: a call takes the one used last (looked at once, dropped if it
expired or the server closed it), or opens one; a response read to its end
puts its connection back. Nothing caps the calls in flight: they are
bounded already, one turn at a time per agent.

The stack's oldest connection is looked at too, with each call (by the clock
alone), so the ones a quieter hour leaves idle are closed once expired, not
held open forever.
"""

from __future__ import annotations

import functools
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator

import h11
import httpcore
import httpx

KEEPALIVE_S = 5.0
"""How long an idle connection is kept for the next call."""

BODY = "plane_body"
"""The response extension that carries its `_Body` (see `ended`)."""

_LAST_CHUNK = b"0\r\n\r\n"
"""A chunked body's terminating chunk, with no trailers."""


Key = tuple[bytes, bytes, int]
"""An origin as a key (httpcore's `Origin` is not hashable)."""


def _key(origin: httpcore.Origin) -> Key:
    return (origin.scheme, origin.host, origin.port)


class Pool(httpcore.AsyncConnectionPool):
    """HTTP/1.1 connections, reused last-in first-out, no cap."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        super().__init__(ssl_context=ssl_context, keepalive_expiry=KEEPALIVE_S)
        self._ssl = ssl_context
        self._backend = httpcore.AnyIOBackend()
        self._idle: dict[Key, deque[tuple[httpcore.AsyncHTTPConnection, float]]] = {}
        """Per origin, idle connections and when each was put back, the last last."""
        self._busy: set[httpcore.AsyncHTTPConnection] = set()

    @property
    def connections(self) -> list[httpcore.AsyncConnectionInterface]:
        idle = [c for stack in self._idle.values() for c, _ in stack]
        return [*self._busy, *idle]

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        if request.url.scheme not in (b"http", b"https"):
            scheme = request.url.scheme.decode()
            raise httpcore.UnsupportedProtocol(f"Unsupported protocol {scheme!r}.")
        origin = request.url.origin
        while True:
            connection, reused = await self._take(origin)
            try:
                response = await connection.handle_async_request(request)
            except httpcore.ConnectionNotAvailable:
                self._busy.discard(connection)
                if reused:
                    continue  # it went away as it was taken: another, or a new one
                raise
            except BaseException:
                self._busy.discard(connection)
                await connection.aclose()
                raise
            body = _Body(response.stream, self, connection, origin)
            return httpcore.Response(
                status=response.status,
                headers=response.headers,
                content=body,
                extensions={**response.extensions, BODY: body},
            )

    async def _take(self, origin: httpcore.Origin) -> tuple[httpcore.AsyncHTTPConnection, bool]:
        """The connection used last, if it is still good; else a new one."""
        stack = self._idle.get(_key(origin))
        while stack:
            # Taken off the stack before any await: another call may take the next.
            connection, _ = stack.pop()
            # The oldest, by the clock alone (asking a socket costs a poll and more).
            stale = [stack.popleft()[0]] if stack and _idle_too_long(stack[0][1]) else []
            good = not connection.has_expired()  # idle too long, or the server closed it
            if good:
                self._busy.add(connection)
            else:
                stale.append(connection)
            for old in stale:
                await old.aclose()
            if good:
                return connection, True
        connection = httpcore.AsyncHTTPConnection(
            origin=origin,
            ssl_context=self._ssl,
            keepalive_expiry=KEEPALIVE_S,
            network_backend=self._backend,
        )
        self._busy.add(connection)
        return connection, False

    def give_back(self, connection: httpcore.AsyncHTTPConnection, origin: httpcore.Origin) -> None:
        """After its response was closed: kept if it can carry another call."""
        self._busy.discard(connection)
        if connection.is_idle():
            self._idle.setdefault(_key(origin), deque()).append((connection, time.monotonic()))

    async def aclose(self) -> None:
        connections = self.connections
        self._busy.clear()
        self._idle.clear()
        for connection in connections:
            await connection.aclose()


def _idle_too_long(since: float) -> bool:
    return time.monotonic() - since > KEEPALIVE_S


class _Body:
    """A response's body; closing it gives its connection back to the pool."""

    def __init__(
        self,
        stream: object,
        pool: Pool,
        connection: httpcore.AsyncHTTPConnection,
        origin: httpcore.Origin,
    ) -> None:
        self._origin = origin
        self._stream = stream
        self._pool = pool
        self._connection = connection
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        assert hasattr(self._stream, "__aiter__")
        async for part in self._stream:
            yield part

    def ended(self) -> bool:
        """True when the body's end has already arrived: all that is left
        unread is in the connection's buffer, so reading it to its end waits
        for no network. Only the plain case is recognised (HTTP/1.1, the
        previous chunk read whole, then the terminating chunk with no
        trailers); anything else is False, never a wrong True."""
        h11_conn = getattr(self._connection, "_connection", None)
        state = getattr(h11_conn, "_h11_state", None)
        if not isinstance(state, h11.Connection) or state.their_state is not h11.SEND_BODY:
            return False
        unread, closed = state.trailing_data
        # After a Data event the buffer holds nothing of the chunk it came
        # from but, at most, the chunk's closing CRLF.
        return not closed and unread.removeprefix(b"\r\n") == _LAST_CHUNK

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if hasattr(self._stream, "aclose"):
                await self._stream.aclose()
        finally:
            self._pool.give_back(self._connection, self._origin)


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default verifying context, made once a process: loading the
    CA bundle takes ~45 ms, and one context serves every connection."""
    return httpx.create_ssl_context()


def ended(response: httpx.Response) -> bool:
    """True when a streamed response's end is already in its connection's
    buffer (a response not from `Pool`: False)."""
    body = response.extensions.get(BODY)
    return isinstance(body, _Body) and body.ended()


def pooled() -> httpx.AsyncHTTPTransport:
    """An httpx transport on `Pool`, verifying TLS as httpx does by default."""
    context = tls_context()
    transport = httpx.AsyncHTTPTransport(verify=context)
    transport._pool = Pool(context)
    return transport
