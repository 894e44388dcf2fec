"""The plane's side of an agent's tools: the `ToolContext` a turn hands them.

Tools ask; this decides. A ceiling can only be asked for through
`commands.ask_limit` (tighten-only); a booking goes to `book` (the
scheduler's); the scout runs a turn of its own, on its own row and ceiling
(`scout`, the scout's); a refused ask is told to `refused_ask` (the alerts'),
and an ask's reply and `budget_status` say the spend as the agent's row
prices it (`priced`, the rows').
All are callables handed down when the plane is built: nothing here reaches
back up.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from plane.agents.commands import PricedAt, RefusedAsk, all_priced, ask_limit
from plane.agents.services import Services
from plane.clock import Clock, until
from plane.economy.compress.retrieve import retrieve
from plane.errors import ToolError
from plane.money.limits import ALL_PRICED
from plane.tools.search import grep_text
from plane.wire.protocol import MessageAppended

if TYPE_CHECKING:
    from plane.agents.scheduler import Booking
from plane.wire.words import tokens, usd, usd_exact

Scout = Callable[[str, str, list[str], Path], Awaitable[str]]
"""(asking agent, question, paths, workspace) → the scout's concise answer."""

Book = Callable[[str, datetime, str], Awaitable["Booking"]]
"""(agent, when, note) → the booking made (`Scheduler.book`)."""


class AgentToolContext:
    """One agent's turn, as its tools see it."""

    def __init__(
        self,
        services: Services,
        agent: str,
        workspace: Path,
        book: Book,
        scout: Scout | None,
        refused_ask: RefusedAsk | None = None,
        priced: PricedAt = all_priced,
    ) -> None:
        """`priced`: how its row prices its spend, which its ask's reply and
        `budget_status` say as the row does."""
        self.agent = agent
        self.workspace = workspace
        self.sandboxed = services.config.sandbox
        self.clock: Clock = services.clock
        self._services = services
        self._book = book
        self._scout = scout
        self._refused_ask = refused_ask
        self._priced = priced

    async def schedule_turn(self, at: datetime, note: str) -> str:
        booking = await self._book(self.agent, at, note)
        now = self.clock.now()
        return (
            f"Booked a turn for {booking.due:%Y-%m-%d %H:%M:%S} UTC "
            f"(in {until(now, booking.due)}): {note}"
        )

    async def ask_limit(self, value: str) -> str:
        messages, reply = await ask_limit(
            self._services, self.agent, value, self._refused_ask, priced=self._priced
        )
        for message in messages:
            self._services.emit(MessageAppended(message=message))
        return reply

    async def budget_status(self) -> str:
        """The day's spend as the agent's row says it (`$?` on a model with no
        known price, never `$0.00`), its ceiling and what is left of it (at
        most so much, when the spend is only known to be at least its figure)."""
        services = self._services
        spent = await services.ledger.spend_today(self.agent)
        ceiling = services.gate.ceilings.of(self.agent)
        priced = self._priced(spent)
        figure = priced.spend(spent, ceiling)
        now = self.clock.now()
        reset = f"The day resets at 00:00 UTC, in {until(now, services.gate.resets_at())}."
        context = await self._context_used()
        if ceiling is None:
            return f"Spent today: {figure}; no daily ceiling. {reset} {context}"
        left = max(ceiling - spent, Decimal(0))  # a turn may cross it; `usd` takes a Decimal
        at_most = "" if priced == ALL_PRICED else "at most "
        return (
            f"Spent today: {figure} of a {usd_exact(ceiling)} daily ceiling "
            f"({at_most}{usd(left)} left). {reset} {context}"
        )

    async def _context_used(self) -> str:
        """How full the model's context is, estimated (3.5 characters a token)."""
        services = self._services
        history = await services.transcript.load(self.agent)
        used = math.ceil(sum(len(m.content) for m in history) / 3.5)
        window = services.config.providers[services.roster.get(self.agent).provider]
        return f"Context: about {tokens(used)} of {tokens(window.context_window)} tokens used."

    async def ask_scout(self, question: str, paths: list[str]) -> str:
        if self._scout is None:
            raise ToolError("There is no scout on this plane.")
        return await self._scout(self.agent, question, paths, self.workspace)

    async def retrieve(
        self,
        ref: str,
        *,
        lines: str | None,
        chars: str | None,
        pointer: str | None,
        grep: str | None,
    ) -> str:
        refs = self._services.refs
        if refs is None:
            raise ToolError("Compression is off on this plane, so there is nothing to retrieve.")
        if grep is None or (lines, chars, pointer) != (None, None, None):
            # No regular expression to run, or one mode too many (refused before any read).
            return await asyncio.to_thread(
                retrieve, refs, ref, lines=lines, chars=chars, pointer=pointer, grep=grep
            )
        # A pattern may backtrack for hours: run in a thread, it would hold the interpreter.
        content = await asyncio.to_thread(retrieve, refs, ref)
        return await grep_text(content, grep, self.workspace, self.sandboxed)
