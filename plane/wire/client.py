"""A client of the plane's socket, for the `plane` command.

`connect()` says hello with the plane's token, read from the socket's
directory (the home) unless given; `request()` sends a frame and returns the
reply with its id; events that arrive in between are queued for `events()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from plane.wire import protocol as p
from plane.wire.errors import NotRunning, PlaneError
from plane.wire.token import read_token


class RequestFailed(PlaneError):
    def __init__(self, error: p.Error) -> None:
        super().__init__(error.message)
        self.error = error


class PlaneClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[p.Reply]] = {}
        self._events: asyncio.Queue[p.Event | None] = asyncio.Queue()
        self._task = asyncio.create_task(self._read())

    @classmethod
    async def connect(
        cls, socket: Path, *, tcp: tuple[str, int] | None = None, token: str | None = None
    ) -> PlaneClient:
        try:
            if tcp is not None:
                reader, writer = await asyncio.open_connection(*tcp, limit=p.MAX_FRAME_BYTES * 2)
            else:
                reader, writer = await asyncio.open_unix_connection(
                    socket, limit=p.MAX_FRAME_BYTES * 2
                )
        except (FileNotFoundError, ConnectionRefusedError):
            raise NotRunning(f"{tcp[0]}:{tcp[1]}" if tcp else str(socket)) from None
        if token is None and tcp is None:
            token = read_token(socket.with_name("token"))
        client = cls(reader, writer)
        try:
            await client.request(
                p.Hello, protocol_version=p.PROTOCOL_VERSION, client="plane-cli", token=token
            )
        except BaseException:
            await client.close()
            raise
        return client

    async def request(self, kind: type[p.RequestFrame], **fields: Any) -> p.Reply:
        ident = next(self._ids)
        frame = p.encode(kind(id=ident, **fields))
        future: asyncio.Future[p.Reply] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        try:
            self._writer.write(frame)
            await self._writer.drain()
        except BaseException:  # never sent: nobody will wait for its reply
            self._waiting.pop(ident, None)
            if future.done() and not future.cancelled():
                future.exception()  # the reader's "connection gone", superseded by this one
            raise
        reply = await future
        if isinstance(reply, p.Error):
            raise RequestFailed(reply)
        return reply

    async def events(self) -> AsyncIterator[p.Event]:
        while (event := await self._events.get()) is not None:
            yield event

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()

    async def _read(self) -> None:
        try:
            while line := await self._reader.readline():
                frame = p.decode_server_frame(line)
                ident = getattr(frame, "id", None)
                if ident is not None and ident in self._waiting:
                    self._waiting.pop(ident).set_result(frame)  # type: ignore[arg-type]
                elif isinstance(frame, p.Error):
                    continue
                else:
                    self._events.put_nowait(frame)  # type: ignore[arg-type]
        finally:
            gone = NotRunning("the socket (the plane closed the connection)")
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(gone)
            self._events.put_nowait(None)
