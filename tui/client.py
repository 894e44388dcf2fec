"""The one owner of the plane's socket.

`PlaneClient` is deliberately not a widget: it connects (Unix socket, or TCP
with a token), says hello, subscribes, then reads frames in one task. Replies
resolve the future of the request with the same `id`; events are posted to
the app as Textual messages, in the order they arrived, so the store never
sees an event from before the snapshot it came after. When the plane goes
away it says so, waits (with backoff), and does it all again; the fresh
snapshot is the resync.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from textual.message import Message

from plane.home import read_token
from plane.wire.protocol import (
    MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
    AgentCreated,
    BadFrame,
    Error,
    Hello,
    History,
    Ledger,
    LedgerQuery,
    Messages,
    NewAgent,
    Reply,
    RequestFrame,
    Send,
    Sent,
    SnapshotReply,
    Subscribe,
    Welcome,
    decode_server_frame,
    encode,
)
from tui.messages import PlaneConnected, PlaneEvent, PlaneLost

R = TypeVar("R", bound=Reply)

NEW_AGENT_TIMEOUT_S = 90.0  # longer than the embedded model's 60 s to start
EVENT_TYPES = frozenset(
    {"message", "text_delta", "turn_started", "turn_finished", "agent_updated", "day_rolled"}
)


class PlaneUnavailable(ConnectionError):
    """There is no connection to the plane right now; nothing was sent."""


class PlaneRefused(Exception):
    """The plane answered a request with an `error` frame. `str()` is its
    sentence, meant to be shown to the operator as it is."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Address:
    """Where the plane listens: a Unix socket path, or host:port with a token.

    On the socket the token is read from the socket's directory (the plane's
    home) at every attempt, unless given: a plane that starts after the app
    has made it by the time its socket answers."""

    path: Path | None = None
    host: str | None = None
    port: int | None = None
    token: str | None = None

    @classmethod
    def tcp(cls, host_port: str, token: str | None) -> Address:
        host, _, port = host_port.rpartition(":")
        return cls(host=host or "127.0.0.1", port=int(port), token=token)

    async def open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        limit = MAX_FRAME_BYTES + 1
        if self.path is not None:
            return await asyncio.open_unix_connection(self.path, limit=limit)
        return await asyncio.open_connection(self.host, self.port, limit=limit)

    def hello_token(self) -> str | None:
        if self.token is None and self.path is not None:
            return read_token(self.path.with_name("token"))
        return self.token

    def __str__(self) -> str:
        return str(self.path) if self.path is not None else f"{self.host}:{self.port}"


@dataclass
class Backoff:
    """Delays between reconnection attempts: doubling from `first`, capped at
    `most`, so a restarting plane is found within seconds and a dead one is
    not hammered."""

    first: float = 0.25
    most: float = 5.0

    def delay(self, attempt: int) -> float:
        return min(self.most, self.first * 2.0 ** max(0, attempt - 1))


class _Lost(Exception):
    """Internal: the session ended; carries the sentence to show."""


class PlaneClient:
    """Talks to one plane for the life of the app."""

    def __init__(
        self,
        address: Address,
        post: Callable[[Message], Any],
        *,
        backoff: Backoff | None = None,
        request_timeout: float = 30.0,
    ) -> None:
        self.address = address
        self._post = post
        self._backoff = backoff or Backoff()
        self._timeout = request_timeout
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Reply]] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._ready = asyncio.Event()
        self._was_up = False
        """The last session got as far as a snapshot: the next wait starts short."""

    @property
    def connected(self) -> bool:
        return self._ready.is_set()

    # ── the connection's life ──────────────────────────────────────────────

    async def run(self) -> None:
        """Connect, serve, and reconnect until cancelled, or until the plane
        refuses this client: trying again would be refused the same way."""
        attempt = 0
        while True:
            try:
                await self._session()
                reason = "The plane closed the connection."
            except PlaneRefused as exc:
                if exc.code == "unauthorized":
                    where = str(self.address)
                    self._post(PlaneLost(f"{exc} {_FINAL}", 0, attempt + 1, where, final=True))
                    return
                reason = _sentence(exc)
            except (OSError, asyncio.IncompleteReadError, _Lost) as exc:
                reason = _sentence(exc)
            except BadFrame as exc:
                reason = f"The plane sent a frame this client cannot read: {exc}"
            finally:
                self._drop()
            attempt = 1 if self._was_up else attempt + 1
            delay = self._backoff.delay(attempt)
            self._post(PlaneLost(reason, delay, attempt, str(self.address)))
            await asyncio.sleep(delay)

    async def _session(self) -> None:
        self._was_up = False
        reader, writer = await self.address.open()
        self._writer = writer
        reading = asyncio.create_task(self._read(reader))
        try:
            welcome = await self._call(
                Hello,
                protocol_version=PROTOCOL_VERSION,
                client="tui",
                token=self.address.hello_token(),
            )
            if not isinstance(welcome, Welcome) or welcome.protocol_version != PROTOCOL_VERSION:
                raise _Lost("The plane speaks another protocol version; upgrade one of them.")
            await self._call(Subscribe)
            self._was_up = True
            self._ready.set()
            await reading
        finally:
            reading.cancel()
            writer.close()

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while line := await reader.readline():
                if not line.endswith(b"\n"):
                    break
                self._dispatch(decode_server_frame(line))
            raise _Lost("The plane closed the connection.")
        finally:
            # Whoever waits for a reply (the handshake too) hears it now, not at a timeout.
            self._fail_pending()

    def _dispatch(self, frame: Any) -> None:
        if frame.type in EVENT_TYPES:
            self._post(PlaneEvent(frame))
            return
        if isinstance(frame, SnapshotReply):
            # Posted here, in stream order, so no event overtakes the snapshot.
            self._post(PlaneConnected(frame.snapshot, str(self.address)))
        future = self._pending.pop(frame.id, None) if frame.id is not None else None
        if future is None or future.done():
            return
        if isinstance(frame, Error):
            future.set_exception(PlaneRefused(frame.code, frame.message))
        else:
            future.set_result(frame)

    def _drop(self) -> None:
        self._ready.clear()
        self._writer = None
        self._fail_pending()

    def _fail_pending(self) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(PlaneUnavailable("The connection to the plane was lost."))
        self._pending.clear()

    # ── requests ───────────────────────────────────────────────────────────

    async def _call(
        self, kind: type[RequestFrame], within_s: float | None = None, **fields: Any
    ) -> Reply:
        writer = self._writer
        if writer is None:
            raise PlaneUnavailable("Not connected to the plane.")
        ident = next(self._ids)
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        writer.write(encode(kind(id=ident, **fields)))
        try:
            await writer.drain()
            return await asyncio.wait_for(future, within_s or self._timeout)
        finally:
            self._pending.pop(ident, None)

    async def request(
        self,
        kind: type[RequestFrame],
        answer: type[R],
        within_s: float | None = None,
        **fields: Any,
    ) -> R:
        """Send one request once connected; its reply (an `answer`), or `PlaneRefused`."""
        if not self._ready.is_set():
            raise PlaneUnavailable("Not connected to the plane.")
        reply = await self._call(kind, within_s, **fields)
        if not isinstance(reply, answer):
            raise PlaneRefused(
                "bad_frame",
                f"The plane answered with a `{reply.type}` frame this client did not expect.",
            )
        return reply

    async def send(self, agent: str, text: str) -> Sent:
        return await self.request(Send, Sent, agent=agent, text=text)

    async def history(self, agent: str, limit: int = 200, before_id: int | None = None) -> Messages:
        return await self.request(History, Messages, agent=agent, limit=limit, before_id=before_id)

    async def new_agent(self, name: str, model: str, role: str = "") -> AgentCreated:
        # The first agent on the embedded model starts it (up to a minute on a slow machine).
        return await self.request(
            NewAgent, AgentCreated, within_s=NEW_AGENT_TIMEOUT_S, name=name, model=model, role=role
        )

    async def ledger(self) -> Ledger:
        return await self.request(LedgerQuery, Ledger)


_FINAL = "Not trying again: start the app again once the plane would let it in."


def _sentence(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError | ConnectionRefusedError):
        return "The plane is not running."
    text = str(exc).strip()
    return text or type(exc).__name__
