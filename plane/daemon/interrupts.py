"""The operator's interrupt through any plane of a fleet: the turn another
plane runs is cut there.

The plane asked tells the agent's owner on the store's notification channel
(`fleet.CHANNEL`, the wake's) and waits for its answer on the same channel:
the turn cut (the owner's conversation says what it cost, which every
plane's clients are told), no turn to cut, or no answer within `ANSWER_S`
(the owner stalled or cut off: its lease then moves, and the turn with it).
A wake's payload is an agent's name, which holds no space: an ask and an
answer do, so a plane that knows only wakes reads neither as one."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from functools import partial

from plane.daemon import fleet
from plane.store.postgres import PostgresDatabase

log = logging.getLogger(__name__)

ASK = "interrupt"
ANSWER = "interrupted"


def answer_s() -> float:
    """How long an ask waits for the owner's answer: a lease, by which time
    an owner that does not answer has lost the agent to another plane."""
    return fleet.LEASE_S


class Interrupts:
    """Asks to cut a turn another plane runs, and the answers to them; the
    asks of the others for the agents this plane runs, acted on."""

    def __init__(
        self,
        db: PostgresDatabase,
        owns: Callable[[str], bool],
        cut: Callable[[str], Awaitable[bool]],
    ) -> None:
        """`owns`: whether this plane runs an agent; `cut`: cut its turn here,
        True once its conversation says what the turn cost (False: none ran)."""
        self._db = db
        self._owns = owns
        self._cut = cut
        self._asked: dict[str, asyncio.Future[bool]] = {}
        """This plane's asks waiting for their answer, by nonce."""
        self._cutting: set[asyncio.Task[None]] = set()

    async def ask(self, agent: str) -> bool | None:
        """Have the plane that runs `agent` cut its turn: True, cut and told;
        False, it was taking none; None, no answer."""
        nonce = secrets.token_hex(8)
        answered: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._asked[nonce] = answered
        try:
            await self._db.write(partial(fleet.notice, f"{ASK} {agent} {nonce}"))
            async with asyncio.timeout(answer_s()):
                return await answered
        except TimeoutError:
            return None
        finally:
            self._asked.pop(nonce, None)

    def heard(self, payload: str) -> bool:
        """Act on `payload` if it is an ask or an answer (True); False for a wake."""
        kind, _, rest = payload.partition(" ")
        if kind == ASK and rest:
            agent, _, nonce = rest.partition(" ")
            if self._owns(agent):
                task = asyncio.create_task(self._answer(agent, nonce), name=f"cut:{agent}")
                self._cutting.add(task)
                task.add_done_callback(self._cutting.discard)
            return True
        if kind == ANSWER and rest:
            nonce, _, cut = rest.partition(" ")
            answered = self._asked.get(nonce)
            if answered is not None and not answered.done():
                answered.set_result(cut == "1")
            return True
        return False

    async def _answer(self, agent: str, nonce: str) -> None:
        """Cut `agent`'s turn here and answer the plane that asked."""
        try:
            cut = await self._cut(agent)
            await self._db.write(partial(fleet.notice, f"{ANSWER} {nonce} {int(cut)}"))
        except Exception as exc:  # the store away: the asker hears nothing, and says so
            log.warning("an interrupt of %s asked by another plane failed: %s", agent, exc)

    async def aclose(self) -> None:
        for task in list(self._cutting):
            task.cancel()
        await asyncio.gather(*self._cutting, return_exceptions=True)
