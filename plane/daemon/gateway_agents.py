"""The gateway agents as every plane of a fleet sees them: their floors and
their holds, wherever they were met.

**A gateway agent's floor.** A gateway agent has no lease: its client calls
whichever plane it reached, and only that plane's worker learns, as it
charges the call, that it was priced at a floor (its row's `+$?`). Each
tick, the gateway agents another plane wrote lines for since the last one
(its cost lines among them) and whose rows here do not say so yet are read
for a floor call today, in one query (`FLOORED`), before their rows are
shown again: every plane's row says it within a renewal, and after the
plane that met it stops.

**A gateway agent's hold.** Its client may call any plane, so when one
plane's loop guard holds it, or the operator resumes it through one, that
plane NOTIFYs the fleet's channel with its name (as a wake), and every
plane, not only an owner (it has none), reads its settings again at once
and shows its row; a call admitted meanwhile waits for that read. A lost
notice costs no more than a renewal: each tick reads every hold the store
has in one query (`HOLDS`) and reads again those it finds changed.

**The hold of an agent another plane runs.** Its loop guard holds it on
the plane that runs it, which alone shows it so at once; the same query
reads those agents' holds too each tick, so every plane's row says `held`
(and `a loop, p resumes it`) within a renewal, not `idle` until it takes
the agent's lease.

**Only the holds are read.** An agent neither paused nor held, here and in
the store, has nothing to compare: a tick reads the rows that hold an
agent, not each of the thousands of agents another plane runs by name (at
two planes on 10,000 agents, 5,000 names sent and 5,000 rows read on the
event loop every tick, its longest hold of the loop).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from datetime import date
from typing import TYPE_CHECKING

from plane.money.stored import FLOOR_PRICED
from plane.store.postgres import PostgresDatabase

if TYPE_CHECKING:
    from plane.agents.worker import AgentWorker

log = logging.getLogger(__name__)

FLOORED = f"SELECT DISTINCT agent FROM calls WHERE day = ? AND agent = ANY(?) AND {FLOOR_PRICED}"
"""Which of some agents had a call priced at a floor on a day: the ledger's
`floor_priced_agents`, for those agents only (`calls_floor_priced`)."""

HOLDS = "SELECT name, paused, loop FROM agent_settings WHERE paused <> 0 OR loop IS NOT NULL"
"""The agents paused or held by their loop guards, as the store has them:
any other is neither (`GatewayAgents.holds`)."""


class GatewayAgents:
    """This plane's gateway agents (`workers`: every agent's worker here),
    kept as the other planes left them: `told` is how one is read again."""

    def __init__(
        self,
        db: PostgresDatabase,
        workers: Mapping[str, AgentWorker],
        told: Callable[[str], None],
        runs_here: Callable[[str], bool] = lambda agent: True,
    ) -> None:
        """`runs_here`: whether this plane holds an agent's lease."""
        self._db = db
        self._workers = workers
        self._told = told
        self._runs_here = runs_here

    def includes(self, agent: str) -> bool:
        """Whether `agent` is a gateway agent of this plane's: no lease, its
        client calls any plane, so a notice of its hold is every plane's."""
        worker = self._workers.get(agent)
        return worker is not None and worker.spec.gateway is not None

    async def floors(self, agents: Collection[str], day: date) -> None:
        """The gateway agents among `agents` (those another plane wrote
        lines for) that had a call priced at a floor on `day`, and whose
        rows here do not say so yet: marked, as the plane that charged it did."""
        unmarked = [
            agent
            for agent in agents
            if (worker := self._workers.get(agent)) is not None
            and worker.spec.gateway is not None
            and worker.floor_on != day
        ]
        if not unmarked:
            return
        try:
            rows = await self._db.fetchall(FLOORED, day.isoformat(), unmarked)
        except Exception as exc:  # the store away, say: read at its next line here
            log.debug("the gateway agents' floors could not be read: %s", exc)
            return
        for (agent,) in rows:
            if (worker := self._workers.get(agent)) is not None:
                worker.floor_on = day

    async def holds(self) -> None:
        """The gateway agents, and the agents another plane runs, whose hold
        (the loop guard's, a pause) the store has otherwise than this plane,
        in one query of the holds alone: told, as by another plane's notice,
        so they are read again (a gateway agent's before its next call) and
        their rows shown. A notice lost costs no more than a renewal. None
        to compare (no gateway agent, every agent run here): nothing read."""
        if not any(map(self._compared, self._workers)):
            return
        try:
            rows = await self._db.fetchall(HOLDS)
        except Exception as exc:  # the store away, say: read at the next tick
            log.debug("the agents' holds could not be read: %s", exc)
            return
        stored = {agent: (bool(paused), loop is not None) for agent, paused, loop in rows}
        for agent in sorted(stored.keys() | self._held_here()):
            if not self._compared(agent):
                continue
            spec = self._workers[agent].spec
            if stored.get(agent, (False, False)) != (spec.paused, spec.loop is not None):
                self._told(agent)

    def _compared(self, agent: str) -> bool:
        """Whether `agent`'s hold here is compared with the store's: a
        gateway agent's, or one another plane runs (one this plane runs
        holds the store's hold already)."""
        if (worker := self._workers.get(agent)) is None:
            return False
        return worker.spec.gateway is not None or not self._runs_here(agent)

    def _held_here(self) -> set[str]:
        """The agents this plane has paused or held by their loop guards."""
        return {
            agent
            for agent, worker in self._workers.items()
            if worker.spec.paused or worker.spec.loop is not None
        }
