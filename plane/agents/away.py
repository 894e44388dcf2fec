"""The operator's sends while the shared store is away: refused, never
acknowledged and then lost.

Every send (a message, a slash command, a line typed to a gateway agent)
is refused with the one sentence that says so (`send_refused`): at once
when the plane already knows the store is away, or when its first write
finds it out (then nothing of it was written either).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TypeVar

from plane.errors import LedgerError, StoreUnreachable, unreachable
from plane.money.ledger import Ledger
from plane.wire.words import send_refused

T = TypeVar("T")


def refuse_while_unreachable(since: datetime | None) -> None:
    """A send while the shared store is away (since `since`) is refused
    with the sentence that says so."""
    if since is not None:
        raise StoreUnreachable(send_refused(since))


async def kept_or_refused(ledger: Ledger, first_write: Callable[[], Awaitable[T]]) -> T:
    """A send's first write, refused up front if the store is known to be
    away, or with the same sentence if the write finds it away (it was not
    kept: nothing of the send is)."""
    refuse_while_unreachable(ledger.store_unreachable_since())
    try:
        return await first_write()
    except (LedgerError, sqlite3.Error) as error:
        if unreachable(error):
            refuse_while_unreachable(ledger.store_unreachable_since())
        raise
