"""The workers running on this plane, by name: where an agent's worker is found.

Built first and handed to everything that finds a worker: the scheduler and
the fleet wake through it, the rows read it, the crew adds and removes. So
the two parts that need each other — the scheduler wakes the crew's workers,
the crew's workers book with the scheduler — each receive this, and neither
holds the other nor is given it later.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, ValuesView

from plane.agents.services import Ownership
from plane.agents.worker import AgentWorker


class Workers(Mapping[str, AgentWorker]):
    def __init__(self, ownership: Ownership) -> None:
        self._ownership = ownership
        self._by_name: dict[str, AgentWorker] = {}
        self._told_early: set[str] = set()
        """The agents another plane told this one of before their workers
        were made (the plane starting: it listens before it reads what
        waits, and a message stored after that read is told only so): told
        once made, not left for the fleet's next renewal."""

    def __getitem__(self, agent: str) -> AgentWorker:
        return self._by_name[agent]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def items(self) -> ItemsView[str, AgentWorker]:
        """The dict's own view: a snapshot walks every worker, and Mapping's
        looks each one up again by its name (a third of a busy snapshot's
        CPU at 10,000 agents)."""
        return self._by_name.items()

    def values(self) -> ValuesView[AgentWorker]:
        return self._by_name.values()

    def add(self, worker: AgentWorker) -> None:
        """`worker`, found by its agent's name from now on; told at once if
        another plane told of its agent before it was made."""
        name = worker.spec.name
        self._by_name[name] = worker
        if name in self._told_early:
            self._told_early.discard(name)
            worker.told()

    def remove(self, agent: str) -> AgentWorker:
        return self._by_name.pop(agent)

    def renamed(self, old: str, new: str) -> None:
        """`old`'s worker is now found as `new`, in the same place in the order."""
        self._by_name = {
            (new if name == old else name): worker for name, worker in self._by_name.items()
        }

    def wake(self, agent: str) -> None:
        """`agent` has work: its worker here looks, and its owner on another
        plane (when this one does not run it) is told."""
        ownership = self._ownership
        if not ownership.owns(agent) and ownership.notify is not None:
            ownership.notify(agent)
        if agent in self._by_name:
            self._by_name[agent].wake()

    def told(self, agent: str) -> None:
        """Another plane told this one of `agent`, which it runs
        (`AgentWorker.told`): kept until its worker is made, if not yet."""
        if agent in self._by_name:
            self._by_name[agent].told()
        else:
            self._told_early.add(agent)

    async def interrupt(self, agent: str) -> bool:
        """Cut `agent`'s turn here: True once its conversation says what the
        turn cost (False: none of its own ran here)."""
        worker = self._by_name.get(agent)
        return worker is not None and await worker.interrupt()

    def wake_all(self) -> None:
        for worker in self._by_name.values():
            worker.wake()

    def idle(self, agent: str) -> bool:
        """Nothing in flight for `agent` here (true of one with no worker here)."""
        worker = self._by_name.get(agent)
        return worker is None or worker.idle
