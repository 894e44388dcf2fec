"""A call's close while the shared store is away. The call was made, and
its row must say what it cost: the close is put again, fenced as it was
first put, for up to `SETTLE_PATIENCE_S`; past that it is kept, and
written once the store is back (`Stranded.write`, at the fleet's next
tick). Meanwhile the call stays pending, counted at its estimate; if this
plane stops first, whichever plane next takes its agent sweeps the call
at that estimate.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Callable

from plane.errors import LeaseLost, LedgerError, ledger_refused, unreachable
from plane.money.call_writes import Closing
from plane.money.ledger_rows import Recorded
from plane.store.engine import Database
from plane.store.fence import FENCE

log = logging.getLogger(__name__)

SETTLE_PATIENCE_S = 30.0
"""How long closing a call waits for a store that is away before its
failure is the caller's. The call then stays pending, counted at its
estimate, and its close is kept: written once the store is back, or, if
this plane stops first, the call is swept at its estimate by whichever
plane next takes its agent."""


class Stranded:
    """The closes of one ledger that the store refused while it was away."""

    def __init__(self, db: Database, closed_elsewhere: Callable[[int], None]) -> None:
        self._db = db
        self._closed_elsewhere = closed_elsewhere
        """Told of a kept close whose call another plane closed meanwhile."""
        self._kept: dict[int, Closing] = {}
        """Closes the store refused past `SETTLE_PATIENCE_S`, by call: what
        each call cost, kept until the store is back."""

    async def patiently(self, closing: Closing, started: float, error: sqlite3.Error) -> Recorded:
        """`closing` put again while the store is away (`error`), for up to
        `SETTLE_PATIENCE_S` since `started` (fenced: if another plane takes
        the agent meanwhile, `LeaseLost` ends it). Past that it is kept for
        `write`, and the failure is the caller's."""
        deadline = started + SETTLE_PATIENCE_S
        closing.again = True
        while time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            try:  # `_write`'s body: a coroutine a call fewer
                return await self._db.put(closing)
            except sqlite3.Error as again:
                if not unreachable(again):
                    raise ledger_refused(again) from again
                error = again
        self._kept[closing.call] = closing
        raise ledger_refused(error) from error

    async def write(self) -> int:
        """Write the closes the store refused past `SETTLE_PATIENCE_S`, now
        that it may be back: each call's row then says what it cost, and
        the day's sums move from its estimate to that. Each is written under
        the fence it was first put with: a call whose agent another plane
        took meanwhile was swept by that plane at its estimate, and is left
        as that plane counted it. Returns how many were written; while the
        store is still away, every one is kept for the next time."""
        written = 0
        for call, closing in list(self._kept.items()):
            fenced = FENCE.set(closing.fence)
            try:
                put = self._db.put(closing)
            finally:
                FENCE.reset(fenced)
            try:
                await put
            except sqlite3.Error as error:
                if unreachable(error):
                    break
                log.error(
                    "call %d could not be closed at its cost, kept at its estimate: %s", call, error
                )
            except (LeaseLost, LedgerError) as error:  # closed elsewhere: `AlreadyClosed`
                log.warning("call %d was closed by another plane meanwhile: %s", call, error)
                self._closed_elsewhere(call)
            else:
                written += 1
            del self._kept[call]
        return written
