"""The scout: another agent's question, answered by the agent named `scout`
in an ordinary turn of its own (`AgentWorker.take_turn`), on the asking
agent's workspace, its answer capped.

The cap is the structural guarantee that a scout's reading stays in the
scout: the asking agent gets at most `ANSWER_CHARS` back. The gate is asked
with the scout's turn lock held, right before the turn: when several agents
ask at once, each waits for the one before it, whose spend then counts.

With several planes, the scout answers only on the plane that holds its
lease, and its turn runs under that lease (`Ownership.fence`), as its own
turns do: a plane that let it go, or never held it, writes nothing of it
and buys nothing for it (the asker's lease says nothing of the scout's), and
the asker is told why.
"""

from __future__ import annotations

from pathlib import Path

from plane.agents import notices
from plane.agents.services import Ownership
from plane.agents.workers import Workers
from plane.clock import Clock
from plane.errors import LeaseLost, ToolError, lease_lost
from plane.store.fence import FENCE

SCOUT = "scout"
ANSWER_CHARS = 2000
"""At most this much of the scout's answer reaches the asking agent."""


class Scout:
    def __init__(self, workers: Workers, clock: Clock, ownership: Ownership) -> None:
        self._workers = workers
        self._clock = clock
        self._ownership = ownership

    async def __call__(self, asker: str, question: str, paths: list[str], workspace: Path) -> str:
        """One scout turn on `asker`'s workspace; its answer, capped."""
        worker = self._workers.get(SCOUT)
        if worker is None or asker == SCOUT:
            raise ToolError("There is no scout on this plane to ask.")
        listed = ", ".join(paths) if paths else "the workspace"
        async with worker.turn_lock:
            if not self._ownership.owns(SCOUT):  # held here, it is not let go while locked
                raise self._not_here()
            hold = await worker.hold()
            if hold is not None:
                notice = notices.why(hold, self._clock.now())
                raise ToolError(f"The scout is not answering: {notice}")
            fence = FENCE.set(self._ownership.fence(SCOUT))
            try:
                await worker.tell(notices.scout_asked(asker, question, paths))
                result = await worker.take_turn(
                    f"{asker} asks: {question}\nLook at: {listed}\n"
                    "Answer concisely with only what answers the question.",
                    workspace=workspace,
                    own=False,
                )
            except LeaseLost:  # taken by another plane during its turn: nothing more written
                raise self._not_here() from None
            finally:
                FENCE.reset(fence)
        return result.answer[:ANSWER_CHARS] or "The scout found no answer."

    def _not_here(self) -> ToolError:
        """The scout's lease is not this plane's: said as a call refused
        for it at admission says it (`lease_lost`)."""
        ownership = self._ownership
        plane = ownership.plane or ""
        lost = lease_lost(SCOUT, plane, ownership.owner(SCOUT))
        return ToolError(f"The scout is not answering: {lost}.")
