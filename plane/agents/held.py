"""What an agent's conversation has been told of its hold: once per held
spell and reason, not once per message.

The reason last told is kept in the store too (`holds_told`), so a restart
does not say it again; it is read from there first, and again whenever the
agents this plane runs have changed (another plane may have told, or
ended, a hold). Its worker owns one.
"""

from __future__ import annotations

from plane.agents import notices
from plane.agents.services import Services
from plane.money.gate import Hold
from plane.wire.protocol import ConversationMessage


class Told:
    def __init__(self, services: Services) -> None:
        self._services = services
        self._reason: str | None = None
        """The reason of the hold last told (None: not held since), as the
        store keeps it across restarts; read from there first (`_last`)."""
        self._read_at: int | None = None
        """`Ownership.changes` when `_reason` was read (None: not yet)."""

    async def hold(self, agent: str, hold: Hold) -> ConversationMessage | None:
        """Say why `agent` is quiet, unless this spell has said it for this reason."""
        if await self._last(agent) == hold.reason:
            return None
        self._reason = hold.reason  # before the await: a send and the worker race to say it
        services = self._services
        notice = notices.why(hold, services.clock.now())
        said = await services.add_message(agent, "plane", notice)
        await services.conversation.remember_hold(agent, hold.reason)
        return said

    async def remember(self, agent: str, reason: str | None) -> None:
        """`reason` told by other means (a turn's own notice), or None: the
        held spell is over, and the next hold is told."""
        if await self._last(agent) != reason:
            self._reason = reason
            await self._services.conversation.remember_hold(agent, reason)

    def forget(self) -> None:
        """What was told is read from the store again: another plane may
        have told a hold (a gateway agent's, whose client calls any plane)."""
        self._read_at = None

    async def _last(self, agent: str) -> str | None:
        ownership = self._services.ownership
        if self._read_at != ownership.changes:
            at = ownership.changes
            told = await self._services.conversation.told_hold(agent)
            if self._read_at != at:
                self._reason, self._read_at = told, at
        return self._reason
