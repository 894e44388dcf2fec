"""The plane's socket: frames in, replies and events out.

A Unix socket that only its owner can open (mode 0600), and optionally TCP.
On both, a client proves it is the operator by presenting the plane's token
(the file `token` in the home, 0600, which an agent's commands cannot read)
in its `hello`; anything else it says before that is refused.

On the Unix socket the peer's credentials are checked too, as a second wall
(SO_PEERCRED, read when the client connects): a peer of another user (other
than root) is refused, and so is one in another PID namespace than the plane
(an agent's commands run in their own). The rule when the namespace cannot be
read:

- the plane's own (no `/proc`): the check is off, the token alone decides;
- the peer's (it is gone, or `/proc` hides it, or its pid is not visible
  from here — SO_PEERCRED gives 0 then): the peer is refused.

A refusal is one `unauthorized` error, in answer to the client's first frame
(its hello), and the connection closes. Over TCP, a connection that has not
said a good hello within `HELLO_S` is closed, and at most `STRANGERS` such
connections are held at once (`plane.daemon.door`: the oldest goes first);
once greeted, a connection is never timed out (a TUI's subscription is
silent for hours).

Each line is one frame; a line that is not a valid frame, too long, or out of
turn gets one `error` reply and changes nothing — the connection goes on, and
the plane never dies of a bad frame. A connection holds at most one frame's
worth of unread input (1 MiB, plus one read), whatever it sends; over TCP
before a good hello, 64 KiB (a longer line there is refused, and the
connection closes).

Each request is answered by its own task (as uvicorn answers each HTTP
request), so a fast request never waits behind a slow one on the same
connection; replies go out as they are ready and carry their request's id.
The frame-level work — decoding, hello, the refusal, "say hello first" — is
done in order as frames arrive; only the handling itself runs concurrently.
At most `MAX_IN_FLIGHT` requests of one connection are in flight: past that,
the plane stops reading from it until one finishes (a flood of frames makes
no flood of tasks). When the listener closes it stops accepting and reading,
lets the requests in flight finish within `REQUEST_GRACE_S`, cancels the rest
and logs how many.

Everything on these sockets is the operator's: they listen in its context
(`OPERATOR`), so each connection's reads, writes and tasks carry it, and a
loop that serves the operator first (`plane.daemon.loop`) reads its frames
and writes its replies ahead of the agents' traffic.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from plane.daemon.door import Door
from plane.daemon.events import EventBus, Subscription
from plane.daemon.failed import error_reply
from plane.errors import PlaneError
from plane.store.engine import OPERATOR
from plane.wire import protocol as p
from plane.wire.pages import lines

log = logging.getLogger(__name__)

CHUNK = 64 * 1024
CLOSE_GRACE_S = 5.0
"""On shutdown, how long a connection may take to flush what it was sent."""
REQUEST_GRACE_S = 10.0
"""On shutdown, how long the requests in flight may take to finish before
they are cancelled."""
HELLO_S = 5.0
"""Over TCP, how long a connection may take to say a good hello."""
STRANGERS = 64
"""Over TCP, connections held at once that have not yet said a good hello."""
HELLO_BYTES = 64 * 1024
"""Over TCP, the longest line read before a good hello (a hello is one short line)."""
MAX_IN_FLIGHT = 32
"""Requests of one connection handled at once; past it the plane reads no
further frames from that connection until one is answered."""
SEND_BUFFER_BYTES = 4 << 20
"""The kernel's send buffer asked for each connection (it gives at most
`net.core.wmem_max`): a long reply handed over in one write, not a socket
buffer's worth (~200 KiB by default) each time the loop next polls its
sockets, which a busy plane does a few times a second."""

Handler = Callable[[p.Request[Any]], Awaitable[p.Reply]]
SnapshotFn = Callable[[], Awaitable[p.Snapshot]]


class Listener:
    def __init__(
        self,
        handle: Handler,
        snapshot: SnapshotFn,
        bus: EventBus,
        version: str,
        token: str,
        *,
        door: Door | None = None,
    ) -> None:
        """`door` holds the TCP connections not yet greeted (by default
        `STRANGERS` of them, `HELLO_S` each)."""
        if not token:
            raise PlaneError("The plane has no token: no client could prove it is the operator.")
        self._handle = handle
        self._snapshot = snapshot
        self._bus = bus
        self._version = version
        self._token = token.encode()
        self._namespace = pid_namespace("self")
        if self._namespace is None:
            log.warning("this process's PID namespace is unreadable: clients are checked by token")
        self._servers: list[asyncio.Server] = []
        self._connections: dict[_Connection, asyncio.Task[None]] = {}
        self.door = door if door is not None else Door(STRANGERS, HELLO_S)

    async def listen_unix(self, path: Path) -> None:
        """Listen at `path`, in place of what a plane before left there (a
        socket, a file); a directory there is someone's, and is said."""
        try:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        except IsADirectoryError:
            raise PlaneError(
                f"{path} is a directory, where the plane's socket goes: "
                "move it away, then start the plane again."
            ) from None
        old = os.umask(0o177)
        operator = OPERATOR.set(True)  # its sockets are the operator's: see above
        try:
            server = await asyncio.start_unix_server(self._accept(local=True), path)
        finally:
            OPERATOR.reset(operator)
            os.umask(old)
        path.chmod(0o600)
        self._servers.append(server)

    async def listen_tcp(self, host: str, port: int) -> int:
        operator = OPERATOR.set(True)  # its sockets are the operator's: see above
        try:
            server = await asyncio.start_server(self._accept(local=False), host, port)
        finally:
            OPERATOR.reset(operator)
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        # Ending each stream's input ends its connection's loop, which then
        # drains its requests; cancelling the task instead trips asyncio's
        # stream callback on 3.11.
        for connection in list(self._connections):
            connection.hang_up()
        if self._connections:
            grace = REQUEST_GRACE_S + CLOSE_GRACE_S
            await asyncio.wait(list(self._connections.values()), timeout=grace)
        for connection in list(self._connections):  # a client that reads nothing
            connection.abort()
        for server in self._servers:
            await server.wait_closed()

    def refusal(self, writer: asyncio.StreamWriter) -> str | None:
        """Why this Unix-socket peer may not be the operator, or None."""
        sock = writer.get_extra_info("socket")
        option = getattr(socket, "SO_PEERCRED", None)
        if sock is None or option is None or self._namespace is None:
            return None
        pid, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, 12))
        if uid not in (os.geteuid(), 0):
            return _OTHER_USER
        if pid <= 0 or (theirs := pid_namespace(str(pid))) is None:
            return _UNKNOWN_PEER
        if theirs != self._namespace:
            return _OTHER_NAMESPACE
        return None

    def _accept(
        self, local: bool
    ) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            refused = self.refusal(writer) if local else None
            _roomy(writer)
            connection = _Connection(self, reader, writer, refused)
            self._connections[connection] = task
            if not local:  # the Unix socket's peers are checked before any frame
                self.door.arrived(connection, connection.abort)
            try:
                await connection.run()
            finally:
                self.door.left(connection)
                self._connections.pop(connection, None)

        return accept


def _roomy(writer: asyncio.StreamWriter) -> None:
    """Ask for `SEND_BUFFER_BYTES` of send buffer: the snapshot of 10,000
    agents (~1 MiB) then goes out whole while the loop serves the agents,
    instead of in five parts a pass of the loop apart. Asked only: a kernel
    that gives less (or refuses) leaves the default, as before."""
    sock = writer.get_extra_info("socket")
    if sock is None:
        return
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)


def pid_namespace(pid: str) -> str | None:
    """The PID namespace of process `pid` ("self" for this one), or None
    when it cannot be read."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


class _Connection:
    def __init__(
        self,
        listener: Listener,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        refused: str | None,
    ) -> None:
        self._listener = listener
        self._reader = reader
        self._writer = writer
        self._refused = refused
        """Set when the peer may not be the operator: its first frame is answered with it."""
        self._greeted = False
        self._done = False
        self._subscription: Subscription | None = None
        self._pump: asyncio.Task[None] | None = None
        self._writing = asyncio.Lock()
        self._requests: set[asyncio.Task[None]] = set()
        """One task per request being answered (`_answer`), dropped when it ends."""
        self._room = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._closing = False

    async def run(self) -> None:
        try:
            async for line in _lines(self._reader, self._longest):
                await self._frame(line)
                if self._done:
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            await self._drain()
            await self._close()

    def hang_up(self) -> None:
        """Stop reading: the requests in flight finish (within the grace) and
        their replies still go out, then the connection closes."""
        self._closing = True
        self._reader.feed_eof()

    def abort(self) -> None:
        for task in list(self._requests):
            task.cancel()
        transport = self._writer.transport
        transport.abort()

    def _longest(self) -> int:
        return HELLO_BYTES if self in self._listener.door else p.MAX_FRAME_BYTES

    async def _frame(self, line: bytes | None) -> None:
        if line is None and self in self._listener.door:
            await self._write_frame(self._refuse(None, _LONG_HELLO))
        elif line is None:
            await self._write_frame(self._error(None, "too_large", "Frame over the 1 MiB limit."))
        elif not line.strip():
            return  # a blank line is no frame (as in NDJSON): nothing to answer
        elif isinstance(answer := self._read(line), p.Error | p.HelloReply):
            await self._write_frame(answer)
        else:
            await self._room.acquire()  # a full connection is read no further until one ends
            task = asyncio.create_task(self._answer(answer))
            self._requests.add(task)
            task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._requests.discard(task)
        self._room.release()

    def _read(self, line: bytes) -> p.Error | p.HelloReply | p.AnyRequest:
        """The reply due at once (an error, a refusal, a welcome), or the
        request to hand to a task. In frame order: hello is settled before
        the next frame is read."""
        try:
            request = p.decode_request(line)
        except p.BadFrame as exc:
            return self._error(exc.id, exc.code, str(exc))
        except Exception:  # a line the decoder cannot cope with: still one reply
            log.exception("decoding a frame of %d bytes", len(line))
            return self._error(None, "bad_frame", _UNREADABLE)
        if self._refused is not None:
            return self._refuse(request.id, self._refused)
        if isinstance(request, p.Hello):
            return self._hello(request)
        if not self._greeted:
            return p.Error(id=request.id, code="version", message=_SAY_HELLO)
        return request

    def _error(self, ident: int | None, code: p.ErrorCode, message: str) -> p.Error:
        if self._refused is not None:  # whatever a refused peer says, it hears why
            return self._refuse(ident, self._refused)
        return p.Error(id=ident, code=code, message=message)

    async def _answer(self, request: p.AnyRequest) -> None:
        subscription = self._subscribe() if isinstance(request, p.Subscribe) else None
        reply = await self._reply(request)
        with contextlib.suppress(ConnectionError):  # a client gone: its reply has nowhere to go
            await self._write_frame(reply)
        if subscription is not None and self._pump is None:
            # Events start after the snapshot they follow: none was missed
            # (the subscription queued them) and none overtakes it.
            self._pump = asyncio.create_task(self._forward(subscription))

    async def _reply(self, request: p.AnyRequest) -> p.Reply:
        try:
            if isinstance(request, p.Subscribe):
                return p.SnapshotReply(id=request.id, snapshot=await self._listener._snapshot())
            return await self._listener._handle(request)
        except Exception as exc:  # one reply, said once for every request
            return error_reply(request, exc)

    async def _drain(self) -> None:
        """Let the requests in flight finish: all of them when the client
        left (what it asked for still happens), within the grace when the
        plane is closing; cancel the rest and say how many."""
        if not self._requests:
            return
        grace = REQUEST_GRACE_S if self._closing else None
        _, late = await asyncio.wait(set(self._requests), timeout=grace)
        for task in late:
            task.cancel()
        if late:
            log.warning("cancelled %d request(s) still in flight at shutdown", len(late))
            await asyncio.wait(late)

    def _hello(self, hello: p.Hello) -> p.Error | p.HelloReply:
        if hello.protocol_version != p.PROTOCOL_VERSION:
            return p.Error(
                id=hello.id,
                code="version",
                message=(
                    f"This plane speaks protocol {p.PROTOCOL_VERSION}; the client speaks "
                    f"{hello.protocol_version}. Upgrade the older one."
                ),
            )
        # Bytes, not str: compare_digest refuses a str that is not ASCII. The
        # token has no spaces, so a newline pasted from its file is no matter.
        given = (hello.token or "").strip().encode("utf-8", "surrogatepass")
        if not hmac.compare_digest(given, self._listener._token):
            return self._refuse(hello.id, _WRONG_TOKEN)
        self._greeted = True
        self._listener.door.known(self)
        return p.HelloReply(id=hello.id, plane_version=self._listener._version)

    def _refuse(self, ident: int | None, why: str) -> p.Error:
        """A refusal is final: this reply is the connection's last."""
        self._done = True
        self._greeted = False
        return p.Error(id=ident, code="unauthorized", message=why)

    def _subscribe(self) -> Subscription | None:
        """The connection's subscription, made before its snapshot is taken;
        None when it has one already (a second subscribe is just a snapshot)."""
        if self._subscription is not None:
            return None
        self._subscription = self._listener._bus.subscribe()
        return self._subscription

    async def _forward(self, subscription: Subscription) -> None:
        """Events, as they come; what piled up while a write waited goes in one.
        While it keeps up, the bus writes them itself (`_write_now`)."""
        subscription.sink = self._write_now
        while (lines := await subscription.next_lines()) is not None:
            await self._write(lines)
        self._writer.close()

    def _write_now(self, data: bytes) -> bool:
        """A batch from the bus's seal, written at once unless the socket is
        backed up (then `_forward` writes it and waits for the socket)."""
        transport = self._writer.transport
        if transport.is_closing():
            return False
        if transport.get_write_buffer_size() > transport.get_write_buffer_limits()[1]:
            return False
        transport.write(data)
        return True

    async def _write_frame(self, frame: p.Frame) -> None:
        """One frame, or its head and parts (a long list: `plane.wire.pages`),
        in one write."""
        await self._write(lines(frame))

    async def _write(self, data: bytes) -> None:
        async with self._writing:  # replies and events share the stream
            self._writer.write(data)
            await self._writer.drain()

    async def _close(self) -> None:
        if self._subscription is not None:
            self._listener._bus.unsubscribe(self._subscription)
        if self._pump is not None:
            self._pump.cancel()
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()


async def _lines(
    reader: asyncio.StreamReader, longest: Callable[[], int]
) -> AsyncIterator[bytes | None]:
    """Complete lines; None for a line over `longest()` (the frame limit; less
    before a TCP hello), which is skipped up to its end, so the next frame is
    read cleanly.

    The buffer never holds more than the limit plus one read, and a line
    arriving a byte at a time is searched once, not once a byte."""
    buffer = bytearray()
    searched = 0
    skipping = False
    while chunk := await reader.read(CHUNK):
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n", max(start, searched))) >= 0:
            line = bytes(buffer[start:end])
            start, searched = end + 1, 0
            if skipping:
                skipping = False
            elif len(line) > longest():
                yield None
            else:
                yield line
        del buffer[:start]
        searched = len(buffer)
        if skipping or len(buffer) > longest():
            if not skipping:
                yield None
            skipping = True
            buffer.clear()
            searched = 0


_SAY_HELLO = (
    f"Say hello first: send a hello frame with protocol_version {p.PROTOCOL_VERSION} "
    "and the plane's token."
)
_UNREADABLE = "Bad frame: the plane could not read this line; the details are in plane.log."
_LONG_HELLO = "Refused: a hello is one short line, and this one is over 64 KiB."
_WRONG_TOKEN = "Wrong or missing token; it is in the plane's home, in the file `token`."
_OTHER_USER = "Refused: this client runs as another user than the plane."
_OTHER_NAMESPACE = (
    "Refused: this client runs in another PID namespace than the plane, as an agent's "
    "commands do; only the operator's own clients may connect."
)
_UNKNOWN_PEER = (
    "Refused: the plane cannot see which process this client is (its PID namespace "
    "cannot be read), so it cannot be the operator's."
)
