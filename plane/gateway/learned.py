"""What a gateway agent's calls really cost, against what was expected of
them: the plane's estimates learn from the ledger.

Two things per agent, each a high quantile of its recent settled calls, so
one cheap call does not lower the next estimate and one dear call raises it:

- the tokens each answer really had (the likely output of the next call,
  before the request's own limit caps it);
- the ratio of a call's real cost to what its estimated prompt and its real
  answers would cost (so an answer's length is learned once, above), apart
  for calls whose context the provider holds or fetches (a document by URL,
  a previous response, web search): what the body did not show, the next
  such call is expected to bring again. A call that settles far above its
  estimate raises the next ones at once; prompts the provider caches lower
  them.

Kept in `gateway_calls`, a row per settled call beside its ledger row, and
read back when an agent's first call after a start needs it: a restart
forgets nothing. The same rows say how large a response was, for a later
request that names it (`previous_response_id`), and the last size of a
stored prompt or conversation.
"""

from __future__ import annotations

import asyncio
import logging
import math
import sqlite3
from collections import deque
from collections.abc import Awaitable
from dataclasses import dataclass, field
from decimal import Decimal
from sqlite3 import Connection, Row
from typing import TypeVar

from plane.errors import LedgerError, StoreError
from plane.money.stored import amount
from plane.store.engine import Database

log = logging.getLogger(__name__)

WINDOW = 32
"""Recent calls an agent's estimates learn from (per kind)."""
QUANTILE = 0.9
"""How high in those calls' spread the next estimate is taken."""
PLAIN_MOST = Decimal(14)
"""The most a prompt the body shows whole can be learned above its count by
characters: a token per byte at most, four bytes a character at most, where
3.5 characters were counted to a token."""
REMEMBERED = 4096
"""Responses kept in memory by id, for the calls that continue them."""


N = TypeVar("N", int, Decimal)


def high(values: deque[N]) -> N | None:
    """The nearest-rank QUANTILE of `values` (None when there are none)."""
    if not values:
        return None
    ranked = sorted(values)
    return ranked[max(0, math.ceil(QUANTILE * len(ranked)) - 1)]


@dataclass
class Learned:
    """One agent's recent calls, as its next estimates read them."""

    outputs: deque[int] = field(default_factory=lambda: deque(maxlen=WINDOW))
    """Tokens each answer had."""
    ratios: dict[bool, deque[Decimal]] = field(
        default_factory=lambda: {False: deque(maxlen=WINDOW), True: deque(maxlen=WINDOW)}
    )
    """Real cost over `Settled.base_usd`; True: calls with unseen context."""

    def likely_output(self) -> int | None:
        return high(self.outputs)

    def factor(self, unseen: bool) -> Decimal:
        """What the next call's estimate is multiplied by. A prompt the body
        shows whole has at most a token per byte, so no more than PLAIN_MOST
        times its count by characters: one odd call cannot inflate the next."""
        found = high(self.ratios[unseen])
        if found is None:
            return Decimal(1)
        return found if unseen else min(found, PLAIN_MOST)

    def add(self, settled: Settled) -> None:
        self.outputs.append(math.ceil(settled.output_tokens / max(1, settled.choices)))
        if settled.base_usd > 0:
            self.ratios[settled.unseen].append(settled.cost_usd / settled.base_usd)


@dataclass(frozen=True)
class Settled:
    """A settled call, as learning keeps it."""

    call: int
    agent: str
    base_usd: Decimal
    """What its estimated prompt and its real answers cost: the ratio's denominator."""
    unseen: bool
    choices: int
    cost_usd: Decimal
    input_tokens: int
    output_tokens: int
    response_id: str | None = None
    context_key: str | None = None


class Learning:
    """Every gateway agent's `Learned`, read from the store on first use."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._agents: dict[str, Learned] = {}
        self._responses: dict[str, tuple[str, int]] = {}
        """Recent responses by id: their agent, and the tokens they leave in
        the context (input and output)."""

    async def of(self, agent: str) -> Learned:
        learned = self._agents.get(agent)
        if learned is None:
            rows = await self._db.fetchall(_RECENT, agent, 4 * WINDOW)
            learned = Learned()
            for row in reversed(rows):
                learned.add(_settled(agent, row))
            learned = self._agents.setdefault(agent, learned)
        return learned

    async def learn(self, settled: Settled) -> None:
        """A settled call, learned at once: the calls waiting read it next."""
        (await self.of(settled.agent)).add(settled)
        if settled.response_id:
            tokens = settled.input_tokens + settled.output_tokens
            self._responses[settled.response_id] = (settled.agent, tokens)
            while len(self._responses) > REMEMBERED:
                del self._responses[next(iter(self._responses))]

    def keep(self, settled: Settled) -> Awaitable[None]:
        """The same, in the store: a restart learns it again. Put in the
        store's queue at once, so that it shares a commit with what its caller
        writes before awaiting it (the call's line). Not money (the ledger has
        the call already): a store that refuses it is logged, and the call's
        answer still goes to its client."""
        row = (
            settled.call,
            str(settled.base_usd),
            int(settled.unseen),
            settled.choices,
            settled.response_id,
            settled.context_key,
        )

        def keep(conn: Connection) -> None:
            conn.execute(_KEEP, row)

        return self._kept(settled, self._db.submit(keep))

    async def _kept(self, settled: Settled, written: asyncio.Future[None]) -> None:
        try:
            await written
        except sqlite3.Error as error:
            log.warning(
                "%s: what call %d taught was not kept (%s)", settled.agent, settled.call, error
            )

    async def response_tokens(self, agent: str, response: str) -> int | None:
        """The tokens a response of `agent`'s left in its context (None: the
        plane never saw it)."""
        if (known := self._responses.get(response)) is not None:
            return known[1] if known[0] == agent else None
        row = await self._db.fetchone(_RESPONSE, response, agent)
        return None if row is None else int(row[0]) + int(row[1])

    async def context_tokens(self, agent: str, key: str) -> int | None:
        """The input tokens of `agent`'s last call with this stored prompt or
        conversation (a conversation's answer is part of its next input)."""
        row = await self._db.fetchone(_CONTEXT, key, agent)
        if row is None:
            return None
        return int(row[0]) + (int(row[1]) if key.startswith("conversation:") else 0)


def _settled(agent: str, row: Row) -> Settled:
    """A recent call read back. Its amounts no plane wrote (a row edited by
    hand) refuse the agent's calls in the start's sentence naming the row
    (`LedgerError`): what its estimates learn is never taken from them. Read
    with no name: the row is named only then (`_named`)."""
    base, cost = _unnamed(row) or _named(agent, row)
    return Settled(
        call=0,
        agent=agent,
        base_usd=base,
        unseen=bool(row["unseen"]),
        choices=int(row["choices"]),
        cost_usd=cost,
        input_tokens=0,
        output_tokens=int(row["output_tokens"]),
    )


def _unnamed(row: Row) -> tuple[Decimal, Decimal] | None:
    """`_settled`'s amounts; None if one is none."""
    try:
        base, cost = Decimal(row["base_usd"]), Decimal(row["cost_usd"])
        if base.is_finite() and cost.is_finite() and base >= 0 and cost >= 0:
            return base, cost
    except (TypeError, ArithmeticError):
        pass
    return None


def _named(agent: str, row: Row) -> tuple[Decimal, Decimal]:
    named = f"call {row['call']} of {agent}"
    try:
        return (
            amount("gateway_calls", named, "base_usd", row["base_usd"]),
            amount("calls", named, "cost_usd", row["cost_usd"]),
        )
    except StoreError as error:
        raise LedgerError(str(error)) from error


_RECENT = (
    "SELECT g.call, g.base_usd, g.unseen, g.choices, c.cost_usd, c.output_tokens"
    " FROM gateway_calls g JOIN calls c ON c.id = g.call"
    " WHERE c.agent = ? AND c.status = 'settled' AND c.estimated = 0"
    " ORDER BY g.call DESC LIMIT ?"
)
_KEEP = (
    "INSERT INTO gateway_calls (call, base_usd, unseen, choices, response_id, context_key)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (call) DO NOTHING"
)
_RESPONSE = (
    "SELECT c.input_tokens, c.output_tokens FROM gateway_calls g JOIN calls c ON c.id = g.call"
    " WHERE g.response_id = ? AND c.agent = ?"
)
_CONTEXT = (
    "SELECT c.input_tokens, c.output_tokens FROM gateway_calls g JOIN calls c ON c.id = g.call"
    " WHERE g.context_key = ? AND c.agent = ? ORDER BY g.call DESC LIMIT 1"
)
