"""What the CLI can read with no plane running: the ledger, straight from the
home's SQLite file, opened read-only (nothing this does can change it)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, date, datetime

from plane.errors import PlaneError
from plane.home import Home
from plane.money.ledger_rows import entry_of
from plane.wire.protocol import LedgerEntry


def ledger_entries(home: Home, day: date | None) -> tuple[date, list[LedgerEntry]]:
    """The day's calls (None: today, as the plane would count it: the later of
    the clock's UTC day and the last day the plane reached)."""
    path = home.db
    if not path.is_file():
        raise PlaneError(f"No ledger in {home.root} yet: no plane has run there.")
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            db.row_factory = sqlite3.Row
            if day is None:
                day = _today(db)
            rows = db.execute(
                "SELECT * FROM calls WHERE day = ? ORDER BY id", (day.isoformat(),)
            ).fetchall()
    except sqlite3.Error as exc:
        raise PlaneError(f"Cannot read the ledger in {path} ({exc}).") from None
    return day, [entry_of(row) for row in rows]


def _today(db: sqlite3.Connection) -> date:
    clock = datetime.now(UTC).date()  # the CLI's own clock: no plane runs to ask
    try:
        row = db.execute("SELECT day FROM plane_day").fetchone()
    except sqlite3.OperationalError:  # a ledger from before the plane kept its day
        row = None
    return max(clock, date.fromisoformat(row[0])) if row else clock
