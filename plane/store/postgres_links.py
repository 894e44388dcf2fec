"""The links to PostgreSQL: their bounds, their return after the server goes away, the watchdog.

**The server goes away and comes back** (a restart, a crash, a partition).
Every connection (the writer's, the reader's, and the fleet's own) is opened
again when it is found broken, at once the first time and then with backoff
(`Link`); while none can be had the store is *unreachable since* a moment
the plane says (`plane status`, the TUI), and writes fail at once with that
sentence instead of queueing behind a dead link. A transaction whose
connection broke before its COMMIT was sent is run again on a new one (the
server rolled it back); one that broke during its COMMIT is a failure, never
run twice (plane/store/postgres.py).

**Nothing is held for long** (`SESSION`): each session has a lock, a
statement and an idle-in-transaction timeout, and TCP keepalives and a user
timeout on both ends, so a plane paused or cut off mid-transaction loses
its locks (the fleet's row) within `BOUND_S`, not PostgreSQL's two hours of
default keepalive. A link that stops forwarding without closing (a stalled
proxy, a half-open partition) answers keepalives but never the query: the
`Watchdog` cuts the socket of an operation that has run past `WATCH_S`, so
the plane sees the store as unreachable instead of waiting for ever.

**Nothing waits on a dead link to stop.** psycopg answers the cancelling of
a query it is waiting on by cancelling it on the server, through another
connection, and waiting for the server to end it: 5 s and 5 s more on a
link that stopped forwarding. The plane's asynchronous queries are cut
instead when cancelled (`uncancelled`): the link is opened again when next
used. A store being closed gives its writes a bound and then cuts the
links still waiting (plane/store/postgres.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict

from plane.errors import StoreFault
from plane.store.postgres_dialect import Row, bind, fault, first_line, translate

log = logging.getLogger(__name__)

T = TypeVar("T")

BOUND_S = max(2.0, float(os.environ.get("PLANE_LEASE_S", "15")) / 5)
"""How long a lock may be waited for, or a transaction left idle, on a
plane's session: well under a lease (a fifth of it, 3 s by default), so a
plane that stalls holding a lock stalls the others for less than that."""

CLOSE_WAIT_S = 1.0
"""How long closing the reader lets a statement in flight finish before
cutting it (`Reader.close`)."""

WATCH_S = max(8.0, 4 * BOUND_S)
"""An operation with no answer for this long is given up (its socket cut):
past every bound the server itself enforces, so only a dead link reaches it."""

MIGRATION_WATCH_S = 900.0
"""The same for the migration, which the server does not bound (planes
starting together wait for each other's; a large ledger's index may take
minutes): a plane that starts on a dead link finds out within this."""

SESSION: dict[str, Any] = {
    "connect_timeout": max(2, round(2 * BOUND_S)),
    "keepalives": 1,
    "keepalives_idle": max(1, round(BOUND_S)),
    "keepalives_interval": 1,
    "keepalives_count": 3,
    "tcp_user_timeout": int(2 * BOUND_S * 1000),
    "options": " ".join(
        f"-c {name}={value}"
        for name, value in (
            ("lock_timeout", int(BOUND_S * 1000)),
            ("statement_timeout", int(2 * BOUND_S * 1000)),
            ("idle_in_transaction_session_timeout", int(BOUND_S * 1000)),
            ("tcp_keepalives_idle", max(1, round(BOUND_S))),
            ("tcp_keepalives_interval", 1),
            ("tcp_keepalives_count", 3),
            ("tcp_user_timeout", int(2 * BOUND_S * 1000)),
        )
    ),
}
"""Every connection's bounds, on the client (libpq) and on the server (its
settings for this session). Given with the URL's own (`session`)."""


def session(url: str) -> dict[str, Any]:
    """`SESSION` for a connection to `url`: the server settings the URL's
    `options` (or, without them, `PGOPTIONS`) asks for kept — the schema
    the plane's tables live in, say — with the plane's bounds after them,
    which win where both set one. libpq takes one `options`: given alone,
    the plane's would silently drop the user's."""
    own = conninfo_to_dict(url).get("options") or os.environ.get("PGOPTIONS", "")
    if not str(own).strip():
        return SESSION
    return {**SESSION, "options": f"{own} {SESSION['options']}"}


FIRST_RETRY_S = 0.2
MOST_RETRY_S = 2.0
"""Backoff between attempts to reach a store that is away: from the first
to the most, doubling. The plane is back within the most of its return."""


Changed = Callable[[datetime | None], None]
"""Told when the store goes away (since when) and comes back (None), from
the writer's thread as from the loop."""


class Link:
    """Whether the store can be reached, since when not, and when to try
    again (backoff); `changed` is told each time that flips. Shared by the
    writer's thread and the event loop: plain attributes, each set whole."""

    def __init__(self, changed: Changed | None = None) -> None:
        self.since: datetime | None = None
        self.why = ""
        self._retry_at = 0.0
        self._delay = FIRST_RETRY_S
        self.changed: Changed = changed or (lambda since: None)

    def may_try(self) -> bool:
        return time.monotonic() >= self._retry_at

    def failed(self, exc: BaseException) -> None:
        self._retry_at = time.monotonic() + self._delay
        self._delay = min(self._delay * 2, MOST_RETRY_S)
        self.why = first_line(exc)
        if self.since is None:
            self.since = datetime.now(UTC)
            log.warning("the store is unreachable: %s", self.why)
            self.changed(self.since)

    def ok(self) -> None:
        self._retry_at, self._delay = 0.0, FIRST_RETRY_S
        if self.since is not None:
            log.warning("the store is back (unreachable since %s)", f"{self.since:%H:%M:%S}")
            self.since = None
            self.changed(None)

    def fault(self) -> StoreFault:
        """What a write or read fails with while the store is away."""
        since = self.since or datetime.now(UTC)
        return StoreFault(
            f"the store is unreachable since {since:%H:%M:%S} UTC: {self.why or 'no connection'}",
            unreachable=True,
            since=since,
        )


class Watchdog:
    """Cuts the socket of an operation that has had no answer for `WATCH_S`:
    the waiting call then fails at once with the connection lost, as it
    would if the link had closed. One thread, looking five times a second;
    cutting under the same lock as `disarm`, so a socket closed meanwhile
    (and its number reused) is never touched."""

    def __init__(self, bound_s: float) -> None:
        self._bound_s = bound_s
        self._armed: dict[object, tuple[float, int]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="plane-db-watchdog", daemon=True)
        self._thread.start()

    def arm(self, key: object, fileno: int, bound_s: float | None = None) -> None:
        """Watch `key`'s operation on `fileno`, for `bound_s` (else the
        watchdog's own bound)."""
        with self._lock:
            bound = self._bound_s and (bound_s or self._bound_s)  # hurried: none
            self._armed[key] = (time.monotonic() + bound, fileno)

    def disarm(self, key: object) -> None:
        with self._lock:
            self._armed.pop(key, None)

    def hurry(self) -> None:
        """Cut every operation under way, and any armed from now on, at its
        next look (the store closing: a link still unanswered is taken for
        dead)."""
        with self._lock:
            self._bound_s = 0.0
            self._armed = {key: (0.0, fileno) for key, (_, fileno) in self._armed.items()}

    def close(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            now = time.monotonic()
            with self._lock:
                for key, (deadline, fileno) in list(self._armed.items()):
                    if now > deadline:
                        del self._armed[key]
                        _cut(fileno, self._bound_s)


def _cut(fileno: int, bound_s: float) -> None:
    _shut(fileno)
    if bound_s:
        log.warning("the store did not answer within %.0f s: its connection is cut", bound_s)
    else:
        log.warning("the store did not answer before it was closed: its connection is cut")


def _shut(fileno: int) -> None:
    """Shut the socket down (not close it: its owner does), so whoever
    waits on it is woken with the connection lost."""
    try:
        with socket.socket(fileno=os.dup(fileno)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class Reader:
    """The reader: its own connection, each statement its own snapshot
    (autocommit), one at a time; opened again when found broken."""

    def __init__(
        self, pg: psycopg.AsyncConnection[Any], url: str, link: Link, watchdog: Watchdog
    ) -> None:
        self.pg = pg
        self._url = url
        self._link = link
        self._watchdog = watchdog
        self._lock = asyncio.Lock()
        self._closing = False

    async def fetchall(self, sql: str, params: Sequence[Any]) -> list[Row]:
        text, order = translate(sql)
        values = bind(order, params)
        async with self._lock:
            for attempt in range(2):  # a link found broken: once more, on a new one
                if self._closing:
                    raise StoreFault("the store's reader is closed")
                if self.pg.closed:
                    await self._reopen(first=attempt == 1)
                try:
                    return await self._fetch(text, values)
                except psycopg.Error as exc:
                    if not self.pg.closed:
                        raise fault(exc) from exc
                    if attempt == 1:
                        self._link.failed(exc)
                        raise self._link.fault() from exc
            raise AssertionError("unreachable")

    async def _fetch(self, text: str, values: list[Any] | None) -> list[Row]:
        self._watchdog.arm(self, self.pg.fileno())
        try:
            return await uncancelled(self.pg, self._rows(text, values))
        finally:
            self._watchdog.disarm(self)

    async def _rows(self, text: str, values: list[Any] | None) -> list[Row]:
        cursor = await self.pg.execute(text, values)
        if cursor.description is None:
            return []
        names = {column.name: i for i, column in enumerate(cursor.description)}
        return [Row(names, values) for values in await cursor.fetchall()]

    async def _reopen(self, *, first: bool) -> None:
        """A new connection (at once the first time a link is found broken,
        else when the backoff allows); the store's fault if none."""
        if not first and not self._link.may_try():
            raise self._link.fault()
        try:
            self.pg = await connect_async(self._url)
        except psycopg.Error as exc:
            self._link.failed(exc)
            raise self._link.fault() from exc
        self._link.ok()

    async def close(self) -> None:
        """Close the link once no statement is on it: one in flight has
        `CLOSE_WAIT_S` to finish, then its socket is cut and it fails. Closed
        under a statement, the socket would stay in the event loop's selector
        until that statement next looked at it, and a connection given the
        same descriptor meanwhile (a plane started again at once, in the same
        process) would be refused by the loop: "connection socket closed"."""
        self._closing = True
        try:
            async with asyncio.timeout(CLOSE_WAIT_S):
                await self._lock.acquire()
        except TimeoutError:
            if not self.pg.closed:
                _shut(self.pg.fileno())
            await self._lock.acquire()
        try:
            await self.pg.close()
        finally:
            self._lock.release()


async def uncancelled(pg: psycopg.AsyncConnection[Any], operation: Awaitable[T]) -> T:
    """`operation` on `pg`; cancelled, `pg`'s socket is cut rather than its
    query cancelled on the server, which a dead link never answers (psycopg
    would wait 10 s): the operation fails at once, and the cancelling goes on."""
    task = asyncio.ensure_future(operation)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if not task.done() and not pg.closed:
            _shut(pg.fileno())
        await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # failed as the link was cut: said by the cancelling
        raise


def connect(url: str) -> psycopg.Connection[Any]:
    return psycopg.Connection.connect(
        url, autocommit=True, cursor_factory=psycopg.ClientCursor, **session(url)
    )


async def connect_async(url: str) -> psycopg.AsyncConnection[Any]:
    return await psycopg.AsyncConnection.connect(
        url, autocommit=True, cursor_factory=psycopg.AsyncClientCursor, **session(url)
    )


async def listener(url: str) -> psycopg.AsyncConnection[Any]:
    """A connection for LISTEN, with the plane's bounds (the fleet's wake)."""
    return await psycopg.AsyncConnection.connect(url, autocommit=True, **session(url))
