"""Admission of a gateway agent's calls, one step at a time per agent: asked
the gate, weighed in dollars (`plane.gateway.standing`), written pending, or
refused with the sentence that is true of it.

A call is weighed against each ceiling it spends under: its agent's, its
agent's group's, its tag's (`Scope`), each with the calls in flight under
it (its book). Each scope has a lock, which the admissions and the settles
of the calls under it take, always in that order (agent, group, tag), so
calls arriving together each see those before them under every ceiling
they share: every call of an agent takes its agent's, tagged or not (a
tagged call and an untagged one are the same agent's day), and a group's
or a tag's calls take its own too, whichever agent makes them. Agents that
share no budget are never weighed one after the other. A call that would
fit once the calls in flight settle lets go of its locks and waits, and
every settle (and every call whose provider announced its prompt) wakes
the calls waiting under any of its scopes, to be weighed again. The
ledger's admission checks the same ceilings again in the transaction that
writes the call, for every plane (`plane.money.budgets`), and the fleet's,
which no book here weighs. A call it refuses only because of the calls in
flight (what was spent is under the ceiling: another plane's, which this
one's books do not see, or calls of the whole fleet) is no hold: it waits
the same way, woken by any call closing on this plane or after a second
(another plane's closing is not told here), and past its wait is refused
with the same sentence and short Retry-After as the others, its agent
neither told nor shown held.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import sqlite3
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from plane.agents import notices
from plane.agents.guard import Looping
from plane.agents.metering import IN_FLIGHT_RECHECK_S
from plane.agents.roster import AgentSpec
from plane.agents.services import Services
from plane.agents.workers import Workers
from plane.gateway.apis import Wire
from plane.gateway.asked import Asked
from plane.gateway.estimate import Estimate, Estimator
from plane.gateway.learned import Learning
from plane.gateway.refused import GatewayRefused
from plane.gateway.standing import Book, Standing, judge
from plane.money.budgets import Budget, Full, TagFull
from plane.money.gate import AboveAgent, AtCeiling, Hold, Paused, TooDear, Unpriced
from plane.wire.protocol import Usage
from plane.wire.words import UNPRICED

log = logging.getLogger(__name__)

WAIT_S = 30.0
"""How long a call that would fit once the calls in flight settle waits for
them, before it is refused with a short Retry-After."""
RETRY_S = 5
"""The Retry-After of such a refusal: the client tries again soon by itself."""
UNPRICED_CODE = "model_unpriced"
"""The code of a refusal on a model with no price, where the API has codes."""
PAUSED_CODE = "agent_paused"
"""The code of a refusal of a call under a pause, where the API has codes:
the operator's, or a ceiling of $0.00 (the agent's own, its group's, its
tag's, the fleet's). A pause is not a ceiling reached (`daily_ceiling_reached`):
no spend reached it, and no new day ends it."""
TagFullSaid = Callable[[str, TagFull, datetime], None]
"""Told when an agent's call is refused by its tag's ceiling (`TagFull`),
with when the day ends (the alerts': `Notifier.tag_full`)."""
LOOP_RETRY_S = 3600
"""The Retry-After of a call refused by a hold no day's end lifts (its agent
held in a loop, paused, or on a model with no price): long enough that a
client stops and shows the sentence (Claude Code does past a minute), which
says what lets the agent go on (the operator's resume, a limit, a price)."""


@dataclass(frozen=True)
class Scope:
    """One ceiling a call is weighed against, and the calls in flight under it."""

    key: str
    """`agent:NAME`, `group:NAME`, `tag:NAME`: its book of calls in flight."""

    @property
    def kind(self) -> str:
        return self.key.partition(":")[0]

    @property
    def name(self) -> str:
        return self.key.partition(":")[2]

    @property
    def whose(self) -> notices.Whose:
        return notices.whose_ceiling(self.kind, self.name)


class Admission:
    def __init__(
        self,
        services: Services,
        workers: Workers,
        learning: Learning,
        wait_s: float,
        tag_full: TagFullSaid | None = None,
    ) -> None:
        """Each agent's worker is told the model its client named and why a
        call was refused, once a held spell (`AgentWorker.call_held`);
        `tag_full`, a call refused by its tag's ceiling (the alerts')."""
        self._services = services
        self._tag_full = tag_full
        self._workers = workers
        self._estimator = Estimator(services.pricer, learning)
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._books: defaultdict[str, Book] = defaultdict(Book)
        self._waiting: defaultdict[str, set[asyncio.Event]] = defaultdict(set)
        """The calls waiting to be weighed again, under each scope's key."""
        self._calls: dict[int, list[str]] = {}
        """Each call in flight: its books (the locks it was admitted under)."""
        self.wait_s = wait_s

    def tag_budget(self, tag: str | None) -> Budget | None:
        """A call's tag as admission checks it (a ceiling only if agents.yaml gives one)."""
        if tag is None:
            return None
        configured = self._services.config.tags.get(tag)
        return Budget(tag, configured.limit_usd if configured else None)

    async def open(
        self,
        wire: Wire,
        spec: AgentSpec,
        model: str,
        asked: Asked,
        wide: bool,
        *,
        tag: str | None = None,
        session: str | None = None,
        still: Callable[[], object] = lambda: None,
    ) -> tuple[int, Estimate]:
        """Admit the call and write it pending, or refuse it (`GatewayRefused`).
        `wide`: the client opened Anthropic's 1M-token context; `tag` and
        `session`, what the call carried, kept with it in the ledger. `still`
        is asked again after each wait for room, and refuses the call
        (`GatewayRefused`) that may no longer go: its key replaced meanwhile
        (`plane key`) stops working at once, for a call that waited too."""
        services, agent = self._services, spec.name
        known = services.pricer.is_known(model)
        self._workers[agent].client_model = model
        group = services.gate.ceilings.groups.budget(agent)
        tagged = self.tag_budget(tag)
        if tagged is not None and tagged.ceiling is not None and not known:
            raise self._lasting(wire, _unpriced_tag(agent, model, tagged.name), UNPRICED_CODE)
        scopes = self._scopes(agent, group, tagged)
        books = [scope.key for scope in scopes]
        deadline = asyncio.get_running_loop().time() + self.wait_s
        while True:
            async with self._holding(books):
                changes = services.gate.ceilings.changes
                # Held or resumed through another plane, which told this one:
                # read before the hold is asked (the agent's calls wait for it).
                await self._workers[agent].read_if_told()
                # The holds only the operator ends first.
                worker = self._workers[agent]
                hold = worker.operators_hold or await services.gate.hold(
                    agent,
                    price_known=known,
                    model=model,
                    settled_only=True,
                    floor_priced=worker.floor_today,
                )
                if hold is not None:
                    await self._tell_hold(agent, hold)
                    raise self._refused(wire, hold)
                estimate = Estimate(Decimal(0), Decimal(0))
                if known:
                    estimate = await self._estimator.estimate(
                        agent, model, asked, wide_context=wide
                    )
                waiting = await self._weigh_all(wire, agent, scopes, estimate, deadline)
                if services.gate.ceilings.changes != changes:
                    continue  # a ceiling set while it was weighed (a `/limit 0`): again
                closed: asyncio.Future[None] | None = None
                if waiting is None:
                    seen = services.ledger.closes
                    written = await self._write_pending(
                        wire, spec, model, estimate, known, group, tagged, session
                    )
                    if not isinstance(written, Full):
                        for book in books:
                            self._books[book].add(written, estimate)
                        self._calls[written] = books
                        await self._spell_over(agent)
                        return written, estimate
                    waiting = self._crowded(wire, agent, written, estimate, deadline)
                    closed = services.ledger.after_close(seen)
                woken = self._listen(books)  # while its locks are held: no wake-up is lost
            await self._asleep(books, woken, waiting, closed)
            still()

    async def _spell_over(self, agent: str) -> None:
        """A call went through: the held spell is over, kept in the store so
        the next hold is told. The call is written pending by now, and only
        its caller, once this returns, sends and settles it: a store failing
        this write costs the note (logged), never the call (it would stay
        pending for good, on a plane that lives on)."""
        try:
            await self._tell_hold(agent, None)
        except sqlite3.Error as exc:
            log.warning("%s: the end of its held spell could not be kept: %s", agent, exc)

    def _scopes(self, agent: str, group: Budget | None, tag: Budget | None) -> list[Scope]:
        """The ceilings a call of `agent`'s is weighed against, its own first."""
        scopes = [Scope(f"agent:{agent}")]
        if group is not None:
            scopes.append(Scope(f"group:{group.name}"))
        if tag is not None and tag.ceiling is not None:
            scopes.append(Scope(f"tag:{tag.name}"))
        return scopes

    @contextlib.asynccontextmanager
    async def _holding(self, books: list[str]) -> AsyncIterator[None]:
        """The locks of `books`, taken in their order (agent, group, tag), the
        same for every call, so no two calls each hold one the other waits for."""
        async with contextlib.AsyncExitStack() as held:
            for book in books:
                await held.enter_async_context(self._locks[book])
            yield

    def _listen(self, books: list[str]) -> asyncio.Event:
        """What wakes a call waiting under `books` (`_wake`)."""
        woken = asyncio.Event()
        for book in books:
            self._waiting[book].add(woken)
        return woken

    async def _asleep(
        self,
        books: list[str],
        woken: asyncio.Event,
        seconds: float,
        closed: asyncio.Future[None] | None = None,
    ) -> None:
        """Until a call under one of `books` settles or is weighed anew, or
        `seconds` pass; or `closed` is done (any call closing on this plane:
        `Ledger.after_close`, for a call the ledger held back)."""
        if closed is not None:
            closed.add_done_callback(lambda _: woken.set())
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken.wait(), seconds)
        finally:
            for book in books:
                self._waiting[book].discard(woken)
            if closed is not None:
                closed.cancel()  # given up on: the ledger drops it

    def _wake(self, books: list[str]) -> None:
        """Every call waiting under any of `books`: they may fit now."""
        for book in books:
            for woken in self._waiting.pop(book, ()):
                woken.set()

    async def announced(
        self, agent: str, call: int, model: str, asked: Asked, estimate: Estimate, usage: Usage
    ) -> None:
        """Its provider announced the call's prompt: weighed anew, so the calls
        waiting on its worst case may go (Claude Code's fan-out waits a moment,
        not a whole answer)."""
        sharper = self._estimator.announced(model, asked, estimate, usage)
        books = self._calls.get(call, [f"agent:{agent}"])
        moved = [self._books[book].tighten(call, *sharper) for book in books] if sharper else []
        if any(moved):
            async with self._holding(books):  # once those weighed meanwhile wait
                self._wake(books)

    @contextlib.asynccontextmanager
    async def closing(self, agent: str, call: int) -> AsyncIterator[None]:
        """Around a call's settle (or failure) in the ledger: no admission is
        weighed meanwhile, and those waiting are woken once it is done."""
        books = self._calls.get(call, [f"agent:{agent}"])
        async with self._holding(books):
            yield
            self.forget(agent, call)
            self._wake(books)

    def forget(self, agent: str, call: int) -> None:
        """A call left open (the plane stopping): it counts its estimate, not its bound."""
        books = self._calls.pop(call, [f"agent:{agent}"])
        for book in books:
            self._books[book].close(call)

    async def _weigh_all(
        self, wire: Wire, agent: str, scopes: list[Scope], estimate: Estimate, deadline: float
    ) -> float | None:
        """None when the call fits under every ceiling it spends under; else the
        longest it may wait for calls in flight. Refuses it (`GatewayRefused`)
        when it does not fit one of them."""
        waits = [await self._weigh(wire, agent, scope, estimate, deadline) for scope in scopes]
        waiting = [w for w in waits if w is not None]
        return max(waiting) if waiting else None

    async def _standing(self, agent: str, scope: Scope) -> Standing | None:
        """The day under `scope`'s ceiling (None: it has none)."""
        services, ledger = self._services, self._services.ledger
        kind, _, name = scope.key.partition(":")
        counted: date | None = None
        if kind == "agent":
            ceiling = services.gate.ceilings.of(agent)
            spent, flying = (await ledger.spend_today(agent), ledger.in_flight(agent))
        elif kind == "group":
            groups = services.gate.ceilings.groups
            ceiling = groups.ceiling(name)
            if ceiling is None:
                return None
            spent = await ledger.budget_spend.group_today(name)
            flying = await ledger.budget_spend.group_in_flight(name)
        else:
            ceiling = services.config.tags[name].limit_usd
            if ceiling is None:
                return None
            counted = await ledger.today()
            spent = await ledger.budget_spend.tag_today(name, counted)
            flying = await ledger.budget_spend.tag_in_flight(name, counted)
        if ceiling is None:
            return None
        book = self._books[scope.key]
        bounds, booked, likely = book.bounds(), book.booked(), book.likely()
        return Standing(ceiling, spent, flying, bounds, booked, likely, day=counted)

    async def _weigh(
        self, wire: Wire, agent: str, scope: Scope, estimate: Estimate, deadline: float
    ) -> float | None:
        """None when the call may go under `scope`'s ceiling; else the seconds
        it may wait for calls in flight to settle. Refuses it (`GatewayRefused`)
        when its own likely cost does not fit, or once it has waited long enough."""
        services = self._services
        day = await self._standing(agent, scope)
        if day is None:
            return None
        kind, name = scope.kind, scope.name
        if kind == "tag" and day.settled >= day.ceiling:
            # Held by the tag: said once a spell, as a hold is; the agent is not held.
            full = TagFull(day.settled, day.ceiling, name, day.day)
            held = AboveAgent(agent, full, services.gate.resets_at())
            await self._tell_hold(agent, held)
            self._tag_reached(agent, full)
            raise self._refused(wire, held)
        verdict = judge(day, estimate)
        if verdict == "go":
            return None
        ceiling, whose = day.ceiling, scope.whose
        if verdict == "too dear":
            resets_at = services.gate.resets_at()
            dear = TooDear(agent, estimate.likely, day.left, ceiling, resets_at, kind, name)
            await self._tell_hold(agent, dear)
            raise self._held(wire, notices.why(dear, services.clock.now()))
        waiting = deadline - asyncio.get_running_loop().time()
        if waiting > 0:
            return waiting
        if verdict == "in flight":
            notice = notices.in_flight(
                agent, day.flying, estimate.likely, day.left, ceiling, RETRY_S, whose
            )
        else:
            notice = notices.may_overshoot(agent, day.left, ceiling, RETRY_S, whose)
        raise _busy(wire, notice)

    def _crowded(
        self, wire: Wire, agent: str, full: Full, estimate: Estimate, deadline: float
    ) -> float:
        """The seconds a call the ledger refused only because of the calls in
        flight (`full`) waits before it is admitted again: until a call closes
        here, or a second passes (another plane's closing is not told here).
        Past its wait, it is refused with a short Retry-After and the sentence
        of the calls in flight, figures as the ledger's admission read them:
        no hold, since nothing was spent that fills the day."""
        waiting = deadline - asyncio.get_running_loop().time()
        if waiting > 0:
            log.debug("%s's call waits for the calls in flight: %s", agent, full)
            return min(waiting, IN_FLIGHT_RECHECK_S)
        left = full.ceiling - (full.spent - full.in_flight)
        whose = notices.whose_ceiling(full.scope, full.name)
        notice = notices.in_flight(
            agent, full.in_flight, estimate.likely, left, full.ceiling, RETRY_S, whose
        )
        raise _busy(wire, notice)

    async def _write_pending(
        self,
        wire: Wire,
        spec: AgentSpec,
        model: str,
        estimate: Estimate,
        known: bool,
        group: Budget | None,
        tag: Budget | None,
        session: str | None,
    ) -> int | Full:
        """The call in the ledger, pending at its likely cost (the fleet's,
        the group's and the tag's ceilings admit it in the same transaction);
        or the ledger's refusal only because of the calls in flight, which
        holds no one (`Full.by_calls_in_flight`: the call may wait for them).
        A refusal by what was spent holds, as the gate does."""
        services = self._services
        try:
            return await services.ledger.open_call(
                spec.name,
                spec.provider,
                model,
                estimate.likely,
                "estimate" if known else UNPRICED,
                fleet_ceiling=services.gate.ceilings.fleet(),
                group=group,
                tag=tag,
                session=session,
            )
        except Full as full:  # refused at admission: held, as by the gate
            if full.by_calls_in_flight:
                return full
            hold = services.gate.full_hold(spec.name, full)  # what was spent alone
            if isinstance(hold.full, TagFull):  # a tag holds its calls, not the agent
                self._tag_reached(spec.name, hold.full)
            else:
                await self._tell_hold(spec.name, hold)
            raise self._refused(wire, hold) from None

    def _tag_reached(self, agent: str, full: TagFull) -> None:
        """A call of `agent`'s refused by its tag's ceiling: the alerts told."""
        if self._tag_full is not None:
            self._tag_full(agent, full, self._services.gate.resets_at())

    async def _tell_hold(self, agent: str, hold: Hold | None) -> None:
        """Why `agent`'s call was refused, said once a held spell (None: one
        went through, and the spell is over)."""
        await self._workers[agent].call_held(hold)

    def _lasting(self, wire: Wire, notice: str, code: str) -> GatewayRefused:
        """The refusal of a call under a hold no day's end lifts (a loop, a
        pause, a model with no price): only what its sentence says does (the
        operator's resume, a limit raised or removed, a price), so no
        Retry-After promises 00:00 UTC; the client is told to wait long
        (`LOOP_RETRY_S`), and stops, and, where the API has a code, why."""
        status, error, extra = wire.held(notice, LOOP_RETRY_S, code=code)
        return GatewayRefused(status, notice, extra, error)

    def _refused(self, wire: Wire, hold: Hold) -> GatewayRefused:
        """The refusal of a call `hold` holds, with its sentence: until 00:00
        UTC (`_held`), or, under a hold no day's end lifts, with its code
        (`_lasting`)."""
        said = notices.why(hold, self._services.clock.now())
        code = _lasting_code(hold)
        return self._held(wire, said) if code is None else self._lasting(wire, said, code)

    def _held(self, wire: Wire, notice: str) -> GatewayRefused:
        """The refusal of a call that does not fit today: true until 00:00 UTC."""
        services = self._services
        left = (services.gate.resets_at() - services.clock.now()).total_seconds()
        status, error, extra = wire.held(notice, max(1, math.ceil(left)))
        return GatewayRefused(status, notice, extra, error)


def _busy(wire: Wire, notice: str) -> GatewayRefused:
    """The refusal of a call that waited for calls in flight and may go
    once they settle: the client tries again in `RETRY_S` seconds."""
    status, error, extra = wire.busy(notice, RETRY_S)
    return GatewayRefused(status, notice, extra, error)


def _lasting_code(hold: Hold) -> str | None:
    """The code of a hold no day's end lifts (None: one 00:00 UTC does)."""
    if isinstance(hold, Looping):
        return "agent_held_in_loop"
    if isinstance(hold, Unpriced):
        return UNPRICED_CODE
    if isinstance(hold, Paused) or _paused(hold):
        return PAUSED_CODE
    return None


def _paused(hold: Hold) -> bool:
    """A ceiling of zero, the agent's own or one above it (its group's, its
    tag's, the fleet's): a pause, which a new day does not end."""
    if isinstance(hold, AboveAgent):
        return hold.full.ceiling == 0
    return isinstance(hold, AtCeiling) and hold.ceiling == 0


def _unpriced_tag(agent: str, model: str, tag: str) -> str:
    return (
        f"{agent} is not answering this call: no price is known for {model}, and calls "
        f"tagged {tag} are under a ceiling, which counts every call. Add the model under "
        "`pricing:` in agents.yaml, or remove the tag's ceiling there (`tags:`)."
    )
