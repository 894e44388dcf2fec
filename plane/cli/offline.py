"""What the CLI can read with no plane running: the ledger, straight from the
plane's store, opened read-only (nothing this does can change it).

The store is the plane's: the PostgreSQL database several planes share when
`PLANE_STORE` (or agents.yaml's `store:`) names one, every plane's calls
there; else the SQLite file in this machine's home (WAL lets it be read while
a plane writes). A file an earlier plane left in the home is not the ledger
once the planes share a database, and is then not read."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from typing import TYPE_CHECKING, Any

from plane.cli.daemon import config_path
from plane.clock import SystemClock, day_of
from plane.errors import PlaneError
from plane.home import Home
from plane.store import is_postgres

if TYPE_CHECKING:  # the protocol's models: loaded only by a command that reads the ledger
    from plane.wire.protocol import LedgerEntry


def ledger_entries(home: Home, day: date | None) -> tuple[date, list[LedgerEntry]]:
    """The day's calls (None: today, as the plane would count it: the later of
    the clock's UTC day and the last day the plane reached)."""
    from plane.money.ledger_rows import entry_of

    with reading(home) as (db, _):
        try:
            if day is None:
                day = plane_day(db)
            rows = db.execute(
                "SELECT * FROM calls WHERE day = ? ORDER BY id", (day.isoformat(),)
            ).fetchall()
        except sqlite3.Error as exc:  # either engine's (a PostgreSQL fault is one too)
            raise PlaneError(f"Cannot read the ledger ({exc}).") from None
    return day, [entry_of(row) for row in rows]


@contextmanager
def reading(home: Home) -> Iterator[tuple[Any, bool]]:
    """The ledger, read-only, and whether it has the columns of groups and
    tags (the shared store always has: every plane brings it up to date)."""
    store = os.environ.get("PLANE_STORE")
    if not store:
        store = _store_in_config()
    if not store:
        with _open_file(home) as conn:
            yield conn, _has_budgets(conn)
        return
    if not is_postgres(store):
        raise PlaneError(f"{store!r} is not a store the plane can use: give a postgresql:// URL.")
    conn = _open_shared(store)
    try:
        yield conn, True
    finally:
        conn.close()


def _store_in_config() -> str | None:
    """agents.yaml's `store:` (None: no file, or no store in it): only that
    key is read, so the file's agents, however many, cost nothing here."""
    path, _ = config_path(None)
    if path is None:
        return None
    from plane.config import store_of

    return store_of(path)


def plane_day(conn: Any) -> date:
    """The later of the clock's day and the latest the ledger reached, as the
    ledger's `today()` (a clock that moved back does not move the day back)."""
    try:
        (latest,) = conn.execute(
            "SELECT MAX(day) FROM (SELECT MAX(day) AS day FROM calls"
            " UNION ALL SELECT day FROM plane_day) AS days"
        ).fetchone()
    except sqlite3.OperationalError:  # a ledger file from before the plane kept its day
        (latest,) = conn.execute("SELECT MAX(day) FROM calls").fetchone()
    clock_day = day_of(SystemClock().now())  # the CLI's own clock: no plane runs to ask
    return clock_day if latest is None else max(clock_day, date.fromisoformat(latest))


def _open_shared(url: str) -> Any:
    """The shared store, read-only, one snapshot for all that is read."""
    import psycopg

    from plane.store.postgres_dialect import Connection, first_line
    from plane.store.postgres_links import connect

    try:
        pg = connect(url)
        pg.autocommit = False
        pg.read_only = True
        pg.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    except psycopg.Error as error:
        raise PlaneError(f"Cannot read the shared store's ledger ({first_line(error)}).") from None
    return Connection(pg)


class _Closing(sqlite3.Connection):
    """A connection that closes when its `with` ends (sqlite3's own only commits)."""

    def __exit__(self, *exc: object) -> None:  # type: ignore[override]
        self.close()


def _open_file(home: Home) -> _Closing:
    path = home.db
    if not path.is_file():
        raise PlaneError(f"No ledger in {home.root} yet: no plane has run there.")
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, factory=_Closing)
        conn.row_factory = sqlite3.Row
        conn.execute("SELECT 1 FROM calls LIMIT 1")
    except sqlite3.Error as error:
        raise PlaneError(f"Cannot read the ledger in {path} ({error}).") from None
    return conn


def _has_budgets(conn: sqlite3.Connection) -> bool:
    """The file has the columns of groups and tags (a plane of this version
    has run on it, and brought it up to date)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(calls)")}
    return "agent_group" in columns
