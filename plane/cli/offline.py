"""What the CLI can read with no plane running: the ledger, straight from the
home's SQLite file, opened read-only (nothing this does can change it)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, date, datetime

from plane.errors import PlaneError
from plane.home import Home
from plane.wire.protocol import LedgerEntry, Usage


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
    return day, [_entry(row) for row in rows]


def _today(db: sqlite3.Connection) -> date:
    clock = datetime.now(UTC).date()  # the CLI's own clock: no plane runs to ask
    try:
        row = db.execute("SELECT day FROM plane_day").fetchone()
    except sqlite3.OperationalError:  # a ledger from before the plane kept its day
        row = None
    return max(clock, date.fromisoformat(row[0])) if row else clock


def _entry(row: sqlite3.Row) -> LedgerEntry:
    return LedgerEntry(
        id=row["id"],
        agent=row["agent"],
        day=date.fromisoformat(row["day"]),
        at=datetime.fromisoformat(row["at"]),
        provider=row["provider"],
        model=row["model"],
        usage=Usage(
            input_tokens=row["input_tokens"],
            cache_read_tokens=row["cache_read_tokens"],
            cache_write_tokens=row["cache_write_tokens"],
            output_tokens=row["output_tokens"],
        ),
        cost_usd=row["cost_usd"],
        price_source=row["price_source"],
        status=row["status"],
        estimated=bool(row["estimated"]),
    )
