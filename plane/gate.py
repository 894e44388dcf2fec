"""Turn gating: whether an agent may start a turn now, and if not, why.

A ceiling stops an agent from *taking* turns, not a turn in flight: the gate
is asked once, before a turn starts. Turns are bounded (a maximum number of
LLM calls), so an agent overshoots its ceiling by at most one turn.

The effective ceiling is the operator's (or the agent's own tighter ask),
set from the conversation and kept in the database, when there is one —
including "off", which stays off — and otherwise the file's: the agent's own
block, else `defaults.limitUsd`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from plane.clock import Clock, next_midnight, until
from plane.ledger import Ledger
from plane.money import usd, usd_exact
from plane.store import Database


@dataclass(frozen=True)
class Hold:
    """Why an agent takes no turn now; `notice` is what the conversation says."""

    reason: str
    notice: str


class Ceilings:
    """Each agent's effective ceiling. The file's values are given at
    construction; the conversation's live in the `ceilings` table."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        self._from_file: dict[str, Decimal | None] = {}
        self._set: dict[str, Decimal | None] = {}

    async def load(self, from_file: dict[str, Decimal | None]) -> None:
        self._from_file = dict(from_file)
        rows = await self._db.fetchall("SELECT agent, limit_usd FROM ceilings")
        self._set = {r["agent"]: _decimal(r["limit_usd"]) for r in rows}

    def add_agent(self, agent: str, from_file: Decimal | None) -> None:
        self._from_file[agent] = from_file

    def of(self, agent: str) -> Decimal | None:
        if agent in self._set:
            return self._set[agent]
        return self._from_file.get(agent)

    async def set(self, agent: str, ceiling: Decimal | None, by: str) -> None:
        async with self._db.transaction() as tx:
            await tx.execute(
                "INSERT INTO ceilings (agent, limit_usd, set_at, set_by) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (agent) DO UPDATE SET limit_usd = excluded.limit_usd,"
                " set_at = excluded.set_at, set_by = excluded.set_by",
                (
                    agent,
                    None if ceiling is None else str(ceiling),
                    self._clock.now().isoformat(),
                    by,
                ),
            )
        self._set[agent] = ceiling


class Gate:
    def __init__(self, ledger: Ledger, ceilings: Ceilings, clock: Clock) -> None:
        self.ledger = ledger
        self.ceilings = ceilings
        self._clock = clock

    async def hold(self, agent: str, *, price_known: bool, model: str) -> Hold | None:
        """None when `agent` may start a turn now."""
        ceiling = self.ceilings.of(agent)
        if ceiling is None:
            return None
        if not price_known:
            return Hold(
                "unpriced",
                f"{agent} is not answering: no price is known for {model}, and an agent "
                "under a ceiling takes no turn it cannot count. Add the model under "
                "`pricing:` in agents.yaml, or remove the limit with /limit off.",
            )
        spent = await self.ledger.spend_today(agent)
        if spent < ceiling:
            return None
        return Hold("ceiling", self._ceiling_notice(agent, spent, ceiling))

    def resets_at(self) -> datetime:
        return next_midnight(self._clock.now())

    def _ceiling_notice(self, agent: str, spent: Decimal, ceiling: Decimal) -> str:
        now = self._clock.now()
        where = "at" if spent == ceiling else "over"
        return (
            f"{agent} has spent {usd(spent)} today, {where} its {usd_exact(ceiling)} daily "
            f"ceiling; it answers at 00:00 UTC, in {until(now, next_midnight(now))}, "
            "or when the limit is raised."
        )


def _decimal(value: str | None) -> Decimal | None:
    return None if value is None else Decimal(value)
