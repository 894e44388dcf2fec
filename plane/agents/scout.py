"""The scout: another agent's question, answered by the agent named `scout`
in an ordinary turn of its own (`AgentWorker.take_turn`), on the asking
agent's workspace, its answer capped.

The cap is the structural guarantee that a scout's reading stays in the
scout: the asking agent gets at most `ANSWER_CHARS` back. The gate is asked
with the scout's turn lock held, right before the turn: when several agents
ask at once, each waits for the one before it, whose spend then counts.
"""

from __future__ import annotations

from pathlib import Path

from plane.agents import notices
from plane.agents.workers import Workers
from plane.clock import Clock
from plane.errors import ToolError

SCOUT = "scout"
ANSWER_CHARS = 2000
"""At most this much of the scout's answer reaches the asking agent."""


class Scout:
    def __init__(self, workers: Workers, clock: Clock) -> None:
        self._workers = workers
        self._clock = clock

    async def __call__(self, asker: str, question: str, paths: list[str], workspace: Path) -> str:
        """One scout turn on `asker`'s workspace; its answer, capped."""
        worker = self._workers.get(SCOUT)
        if worker is None or asker == SCOUT:
            raise ToolError("There is no scout on this plane to ask.")
        listed = ", ".join(paths) if paths else "the workspace"
        async with worker.turn_lock:
            hold = await worker.hold()
            if hold is not None:
                notice = notices.why(hold, self._clock.now())
                raise ToolError(f"The scout is not answering: {notice}")
            await worker.tell(notices.scout_asked(asker, question, paths))
            result = await worker.take_turn(
                f"{asker} asks: {question}\nLook at: {listed}\n"
                "Answer concisely with only what answers the question.",
                workspace=workspace,
                own=False,
            )
        return result.answer[:ANSWER_CHARS] or "The scout found no answer."
