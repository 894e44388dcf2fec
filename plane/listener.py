"""The plane's socket: frames in, replies and events out.

A Unix socket that only its owner can open (mode 0600), and optionally TCP,
where a client must present the plane's token in its `hello`. Each line is
one frame; a line that is not a valid frame, too long, or out of turn gets
one `error` reply and changes nothing — the plane never dies of a bad frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from plane import protocol as p
from plane.errors import PlaneError
from plane.events import EventBus, Subscription

log = logging.getLogger(__name__)

CHUNK = 64 * 1024

Handler = Callable[[p.Request], Awaitable[p.Reply]]
SnapshotFn = Callable[[], Awaitable[p.Snapshot]]


class Listener:
    def __init__(
        self,
        handle: Handler,
        snapshot: SnapshotFn,
        bus: EventBus,
        version: str,
        token: str | None = None,
    ) -> None:
        self._handle = handle
        self._snapshot = snapshot
        self._bus = bus
        self._version = version
        self._token = token
        self._servers: list[asyncio.Server] = []
        self._connections: dict[_Connection, asyncio.Task[None]] = {}

    async def listen_unix(self, path: Path) -> None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        old = os.umask(0o177)
        try:
            server = await asyncio.start_unix_server(self._accept(needs_token=False), path)
        finally:
            os.umask(old)
        path.chmod(0o600)
        self._servers.append(server)

    async def listen_tcp(self, host: str, port: int) -> int:
        if not self._token:
            raise PlaneError("TCP needs a token; the plane did not get one.")
        server = await asyncio.start_server(self._accept(needs_token=True), host, port)
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        # Closing each stream ends its connection's loop; cancelling the
        # task instead trips asyncio's stream callback on 3.11.
        for connection in list(self._connections):
            connection.hang_up()
        if self._connections:
            await asyncio.wait(list(self._connections.values()), timeout=5)
        for server in self._servers:
            await server.wait_closed()

    def _accept(
        self, needs_token: bool
    ) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            connection = _Connection(self, reader, writer, needs_token)
            self._connections[connection] = task
            try:
                await connection.run()
            finally:
                self._connections.pop(connection, None)

        return accept


class _Connection:
    def __init__(
        self,
        listener: Listener,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        needs_token: bool,
    ) -> None:
        self._listener = listener
        self._reader = reader
        self._writer = writer
        self._needs_token = needs_token
        self._greeted = False
        self._subscription: Subscription | None = None
        self._pump: asyncio.Task[None] | None = None
        self._writing = asyncio.Lock()

    async def run(self) -> None:
        try:
            async for line in _lines(self._reader):
                await self._frame(line)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            await self._close()

    def hang_up(self) -> None:
        self._writer.close()
        self._reader.feed_eof()

    async def _frame(self, line: bytes | None) -> None:
        if line is None:
            await self._send(p.Error(code="too_large", message="Frame over the 1 MiB limit."))
            return
        if not line.strip():
            return
        try:
            request = p.decode_request(line)
        except p.BadFrame as exc:
            await self._send(p.Error(id=exc.id, code=exc.code, message=str(exc)))
            return
        await self._send(await self._reply(request))

    async def _reply(self, request: p.Request) -> p.Reply:
        if isinstance(request, p.Hello):
            return self._hello(request)
        if not self._greeted:
            return p.Error(id=request.id, code="version", message=_SAY_HELLO)
        if isinstance(request, p.Subscribe):
            return await self._subscribe(request)
        try:
            return await self._listener._handle(request)
        except PlaneError as exc:
            return p.Error(id=request.id, code=exc.code, message=str(exc))
        except Exception:
            log.exception("request %s", request.type)
            return p.Error(id=request.id, code="internal", message=_INTERNAL)

    def _hello(self, hello: p.Hello) -> p.Reply:
        if hello.protocol_version != p.PROTOCOL_VERSION:
            return p.Error(
                id=hello.id,
                code="version",
                message=(
                    f"This plane speaks protocol {p.PROTOCOL_VERSION}; the client speaks "
                    f"{hello.protocol_version}. Upgrade the older one."
                ),
            )
        token = self._listener._token
        if self._needs_token and not (
            hello.token and token and hmac.compare_digest(hello.token, token)
        ):
            return p.Error(
                id=hello.id,
                code="unauthorized",
                message=("Wrong or missing token; it is in the plane's home, in the file `token`."),
            )
        self._greeted = True
        return p.Welcome(id=hello.id, plane_version=self._listener._version)

    async def _subscribe(self, request: p.Subscribe) -> p.Reply:
        if self._subscription is None:
            self._subscription = self._listener._bus.subscribe()
            self._pump = asyncio.create_task(self._forward(self._subscription))
        return p.SnapshotReply(id=request.id, snapshot=await self._listener._snapshot())

    async def _forward(self, subscription: Subscription) -> None:
        while (event := await subscription.queue.get()) is not None:
            await self._send(event)
        self._writer.close()

    async def _send(self, frame: p.Frame) -> None:
        async with self._writing:  # replies and events share the stream
            self._writer.write(p.encode(frame))
            await self._writer.drain()

    async def _close(self) -> None:
        if self._subscription is not None:
            self._listener._bus.unsubscribe(self._subscription)
        if self._pump is not None:
            self._pump.cancel()
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()


async def _lines(reader: asyncio.StreamReader) -> AsyncIterator[bytes | None]:
    """Complete lines; None for a line over the frame limit (which is skipped
    up to its end, so the next frame is read cleanly)."""
    buffer = b""
    skipping = False
    while chunk := await reader.read(CHUNK):
        buffer += chunk
        while (end := buffer.find(b"\n")) >= 0:
            line, buffer = buffer[:end], buffer[end + 1 :]
            if skipping:
                skipping = False
            elif len(line) > p.MAX_FRAME_BYTES:
                yield None
            else:
                yield line
        if len(buffer) > p.MAX_FRAME_BYTES and not skipping:
            skipping = True
            buffer = b""
            yield None
        elif skipping:
            buffer = b""


_SAY_HELLO = f"Say hello first: send a hello frame with protocol_version {p.PROTOCOL_VERSION}."
_INTERNAL = "The plane failed to handle this request; the details are in plane.log."
