"""THE client of the plane's socket: the `plane` command's, and under the
TUI's link (`tui.link`), which adds reconnecting and Textual messages on top.

`connect()` says hello with the plane's token, read from the socket's
directory (the home) unless given; `request(frame)` numbers the frame, sends
it, and returns the reply with its id (within a time, if given), checked once
to be the one the request names (`p.Send` is answered by a `p.SendReply`, and
mypy knows it: callers neither check nor cast); events that arrive in between
are queued, in the order they came, for `events()`, which ends when the
connection does. An event of a type this client does not know (a newer
plane's) is logged and skipped: a plane may add events without breaking its
older clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TypeVar, get_args

from plane.wire import protocol as p

# Re-exported: the TUI imports only plane.wire (and plane.home), and catches these.
from plane.wire.errors import NotRunning as NotRunning
from plane.wire.errors import PlaneError as PlaneError
from plane.wire.errors import WrongReply as WrongReply
from plane.wire.errors import nothing_at
from plane.wire.pages import Joining
from plane.wire.token import read_token

log = logging.getLogger(__name__)

_EVENTS: tuple[type[p.Event], ...] = get_args(p.Event)

R = TypeVar("R", bound=p.Frame)


class RequestFailed(PlaneError):
    """The plane answered with an `error` frame; `str()` is its sentence."""

    def __init__(self, error: p.Error) -> None:
        super().__init__(error.message)
        self.error = error
        self.code = error.code


class PlaneClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[p.Reply]] = {}
        self._events: asyncio.Queue[p.Event | None] = asyncio.Queue()
        self._joining = Joining()
        """A reply or event sent in parts (`plane.wire.pages`), joined before it is read."""
        self.ended: str | None = None
        """Why the connection ended (a sentence), once it has."""
        self._task = asyncio.create_task(self._read())

    @classmethod
    async def connect(
        cls,
        socket: Path,
        *,
        tcp: tuple[str, int] | None = None,
        token: str | None = None,
        name: str = "plane-cli",
        within_s: float | None = None,
    ) -> PlaneClient:
        """Connected and welcomed; `NotRunning` when nothing listens there,
        `RequestFailed` when the plane refuses the hello."""
        try:
            if tcp is not None:
                reader, writer = await asyncio.open_connection(*tcp, limit=p.MAX_FRAME_BYTES * 2)
            else:
                reader, writer = await asyncio.open_unix_connection(
                    socket, limit=p.MAX_FRAME_BYTES * 2
                )
        except (FileNotFoundError, ConnectionRefusedError):
            raise nothing_at(socket, tcp) from None
        if token is None and tcp is None:
            token = read_token(socket.with_name("token"))
        client = cls(reader, writer)
        try:
            hello = p.Hello(protocol_version=p.PROTOCOL_VERSION, client=name, token=token)
            await client.request(hello, within_s=within_s)
        except BaseException:
            await client.close()
            raise
        return client

    async def request(self, frame: p.Request[R], *, within_s: float | None = None) -> R:
        """The reply to `frame` (its id is this client's to give); `RequestFailed`
        for an `error` reply, `WrongReply` for a frame of another type,
        `TimeoutError` past `within_s`, `NotRunning` when the connection is gone."""
        ident = next(self._ids)
        line = p.encode(frame.model_copy(update={"id": ident}))
        future: asyncio.Future[p.Reply] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        try:
            if self._task.done():
                raise _gone()
            self._writer.write(line)
            await self._writer.drain()
            reply = await asyncio.wait_for(future, within_s)
        except BaseException:
            self._waiting.pop(ident, None)
            if future.done() and not future.cancelled():
                future.exception()  # the reader's "connection gone", superseded by this one
            raise
        if frame.answered_by(reply):
            return reply
        if isinstance(reply, p.Error):
            raise RequestFailed(reply)
        raise WrongReply(frame.type, reply.type)

    @property
    def open(self) -> bool:
        """Still reading: the connection has not ended (it may end any moment)."""
        return not self._task.done()

    async def events(self) -> AsyncIterator[p.Event]:
        while (event := await self._events.get()) is not None:
            yield event

    async def close(self) -> None:
        self._task.cancel()
        try:
            # Not `await self._task` under suppress(CancelledError), which would
            # swallow this closer's own cancellation too (`plane.tasks` says
            # more; the TUI loads nothing of the plane but plane.wire and plane.home).
            await asyncio.wait([self._task])
        finally:
            self._writer.close()  # closed even when the closer is itself stopped meanwhile
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()

    async def _read(self) -> None:
        try:
            while line := await self._reader.readline():
                if not line.endswith(b"\n"):
                    break  # cut off as the plane went: no frame
                self._take(line)
            self.ended = "The plane closed the connection."
        except p.BadFrame as exc:
            self.ended = f"The plane sent a frame this client cannot read: {exc}"
        except ValueError:  # a line past the reader's limit
            self.ended = "The plane sent a frame over the size limit."
        except (ConnectionError, asyncio.IncompleteReadError):
            self.ended = "The connection to the plane broke."
        except Exception:  # a defect here must end this connection, never its user
            log.exception("reading from the plane")
            self.ended = "The plane's connection ended on an error in this client."
        finally:
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(_gone())
            self._events.put_nowait(None)

    def _take(self, line: bytes) -> None:
        try:
            whole = self._joining.take(p.decode_server_frame(line))
        except p.UnknownFrame as exc:
            log.warning("skipping a frame this client does not know: %s", exc.kind)
            return
        if whole is None:
            return  # a part of a reply or event still coming
        frame: p.Frame = whole
        ident = getattr(frame, "id", None)
        waiting = self._waiting.pop(ident, None) if ident is not None else None
        if waiting is not None:
            # Given up on (cancelled) in the moment its reply was on the way:
            # nobody waits for it, and the connection goes on.
            if not waiting.done():
                waiting.set_result(frame)  # type: ignore[arg-type]
        elif isinstance(frame, _EVENTS):
            self._events.put_nowait(frame)
        elif isinstance(frame, p.Error):
            log.warning("an error from the plane for no request: %s", frame.message)
        # else: the reply to a request given up on (timed out): nobody waits for it


def _gone() -> NotRunning:
    return NotRunning("the socket (the plane closed the connection)")
