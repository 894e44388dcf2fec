"""What compression and compaction saved: characters kept out of the
model's input, a row a turn and lever (`lever`), priced at the model's
input rate. Each lever's saving is said under its own name: compression
folds tool output before the model reads it, compaction puts old tool
results of the history behind a marker, and either may be off. The charts
and `plane_compression_*` are compression's; compaction's is on the turn's
cost line and in `plane_compaction_*`.

A character is counted as a quarter of a token (fewer tokens than the
plane's own estimate of 1 in 3.5 gives): a saving is a claim, and a claim
should be the smaller figure. Priced as an uncached input token of the
turn's model, like the call that would have carried it; a model with no
known price saves characters and no stated dollars (never "$0").
"""

from __future__ import annotations

import logging
import sqlite3
from datetime import date
from decimal import Decimal, InvalidOperation
from sqlite3 import Connection, Row

from plane.clock import Clock, day_of
from plane.errors import UnknownPrice
from plane.money.pricing import Pricer
from plane.money.stored import added_up, amount, summand
from plane.money.totals import Record, name_unreadable
from plane.store.engine import Database
from plane.wire.protocol import Usage

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
COMPRESSION = "compression"
COMPACTION = "compaction"


def priced(pricer: Pricer, model: str, chars: int) -> Decimal | None:
    """What `chars` of input would have cost on `model`; None if unknown."""
    try:
        return pricer.price(model, Usage(input_tokens=chars // CHARS_PER_TOKEN)).cost_usd
    except UnknownPrice:
        return None


class Savings:
    def __init__(self, db: Database, clock: Clock, pricer: Pricer) -> None:
        self._db = db
        self._clock = clock
        self._pricer = pricer

    async def record(
        self, agent: str, model: str, chars: int, day: date | None = None, lever: str = COMPRESSION
    ) -> None:
        """One turn's saving by one lever (nothing for a turn that saved nothing)."""
        if chars <= 0:
            return
        now = self._clock.now()
        usd = priced(self._pricer, model, chars)
        row = (
            agent,
            (day or day_of(now)).isoformat(),
            now.isoformat(),
            model,
            chars,
            None if usd is None else str(usd),
            lever,
        )
        try:
            await self._db.write(
                lambda conn: conn.execute(
                    "INSERT INTO savings (agent, day, at, model, chars, usd, lever)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
            )
        except sqlite3.Error:  # a figure for the charts, not money: the turn goes on
            log.exception("what %s saved could not be recorded", lever)


def totals_within(conn: Connection, lever: str = COMPRESSION) -> dict[str, tuple[int, Decimal]]:
    """Per agent, since the ledger began: characters `lever` saved and their
    price (the priced rows only). Dollars no plane wrote are StoreError naming the
    saving, as the charts say it; each row is read by name only if a sum
    fails (`name_unreadable`), so a scrape's every sum costs no more."""
    rows = conn.execute(
        "SELECT id, agent, chars, usd FROM savings WHERE lever = ?", (lever,)
    ).fetchall()
    sums: dict[str, tuple[int, Decimal]] = {}
    try:
        for row in rows:
            chars, usd = sums.get(row["agent"], (0, Decimal(0)))
            if row["usd"] is not None:  # an unpriced saving adds no dollars
                usd += summand(row["usd"])
            sums[row["agent"]] = (chars + row["chars"], usd)
    except InvalidOperation:
        name_unreadable(rows, usd_of)
        raise
    if not added_up(usd for _, usd in sums.values()):
        name_unreadable(rows, usd_of)
    return sums


def between(conn: Connection, first: date, last: date, agent: str | None = None) -> list[Row]:
    """Compression's savings rows on days in [first, last], of one agent or
    all (their dollars read by `usd_of`): the charts say "compression saved"."""
    sql = (
        "SELECT id, agent, model, day, at, chars, usd FROM savings"
        " WHERE day BETWEEN ? AND ? AND lever = ?"
    )
    span = (first.isoformat(), last.isoformat(), COMPRESSION)
    if agent is None:
        return conn.execute(sql, span).fetchall()
    return conn.execute(sql + " AND agent = ?", (*span, agent)).fetchall()


def usd_of(row: Record) -> Decimal | None:
    """A `between` row's dollars (None: its model had no price); StoreError,
    naming the saving, if no plane wrote them (as a call's cost: the charts
    set what was saved beside what was spent)."""
    usd = row["usd"]
    return (
        None
        if usd is None
        else amount("savings", f"saving {row['id']} of {row['agent']}", "usd", usd)
    )
