"""Fencing, for several planes on one store: the lease a write is made under.

A worker sets `FENCE` for its turn; the engine checks it in each write's own
transaction (PostgreSQL's check, plane/store/postgres.py; a store of one
plane has no leases and nothing to check).
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass


@dataclass(frozen=True)
class Fence:
    """The lease a write is made under (several planes on one store): the
    write is refused (`LeaseLost`) unless `plane` still holds `agent`'s lease
    at `epoch` when it runs, in its own transaction."""

    agent: str
    plane: str
    epoch: int


FENCE: contextvars.ContextVar[Fence | None] = contextvars.ContextVar("plane_fence", default=None)
"""The fence of the turn being run. A context variable, as `decimal`'s
context is: a worker sets it once for its turn, and every write made on the
turn's behalf (the ledger's, the conversation's, the notices', however deep
and in whatever task the turn starts) carries it without each layer passing
it on. Unset (None) for the operator's requests and on a store of one plane."""
