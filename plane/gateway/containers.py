"""The code interpreter containers a gateway agent's calls were charged for.

OpenAI bills a container (`code_interpreter`, Responses) once, when it is
made; a later call that runs code in the same one (an automatic container is
reused while it lives, 20 minutes after its last use) is not billed it again.
The plane remembers each container an agent's calls used for an hour after
its last use, in memory: after a restart, a container used again is charged
once more (over, never under).
"""

from __future__ import annotations

from datetime import datetime, timedelta

KEPT = timedelta(hours=1)
"""How long a container is remembered after its last use (OpenAI's expire after 20 minutes)."""


class Containers:
    def __init__(self) -> None:
        self._used: dict[tuple[str, str], datetime] = {}
        """(agent, container id): when a call of the agent last ran code in it."""

    def new(
        self, agent: str, used: tuple[str | None, ...], now: datetime
    ) -> tuple[str | None, ...]:
        """Those of the containers a call of `agent` ran code in that are new
        to its calls, so billed with it (one that names no id always is);
        each is remembered as used `now`."""
        self._used = {key: last for key, last in self._used.items() if now - last < KEPT}
        fresh = tuple(c for c in used if c is None or (agent, c) not in self._used)
        self._used |= {(agent, c): now for c in used if c is not None}
        return fresh
