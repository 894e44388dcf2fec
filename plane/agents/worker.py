"""One agent's worker: takes its turns one at a time, through the gate.

Work is what waits: operator messages not yet answered, and bookings that
came due. When there is work and the gate lets the agent go, it takes one
turn that sees all of it. When the gate holds it, the work stays where it is
(nothing is lost) and the conversation says why the agent is quiet — once
per held spell, not once per message. The day rolling over or a raised
limit wakes the worker, and it answers what waited.

With several planes, a turn runs under its agent's lease at the epoch it
started with (`plane.store.fence.FENCE`): every write it makes is refused once
another plane has taken the agent (`LeaseLost`), and the turn then stops
and says nothing — what it was answering still waits, for the new owner.

The worker is told what to call and knows nothing of who it calls:
`publish` and `show` show its row, `after_turn` says a turn's cost and the spend
notices, the scheduler keeps its bookings. None of them is the crew.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from plane.agents import notices
from plane.agents.guard import Guard, Loop, Looping
from plane.agents.guard_kept import Kept
from plane.agents.held import Told
from plane.agents.roster import AgentSpec
from plane.agents.scheduler import Booking, Scheduler
from plane.agents.services import Services
from plane.agents.session import Session
from plane.agents.turn import Turn, TurnResult
from plane.errors import LeaseLost, LedgerError, unreachable
from plane.history.conversation import CostLine
from plane.money.gate import Hold, Paused
from plane.money.limits import steps_down
from plane.store.engine import KEPT, OPERATOR, Write
from plane.store.fence import FENCE
from plane.wire.protocol import ConversationMessage, MessageAppended, TurnFinished, TurnStarted

if TYPE_CHECKING:
    from plane.agents.toolbox import Tooling

log = logging.getLogger(__name__)


Publish = Callable[[str], Awaitable[object]]
"""(agent) → its row is shown to the clients as it is now."""
Show = Callable[[str, Hold | None], Awaitable[object]]
"""(agent, what the gate just said of it) → its row is shown (the gate not asked again)."""


class TellAfter(Protocol):
    """What a turn's spend says (`plane.agents.after_turn.AfterTurn`): its
    cost line, written with its end, then the notices."""

    async def line(self, agent: str, model: str, result: TurnResult) -> CostLine | None:
        """(agent, its model, what its turn did) → its cost line, if any."""
        ...

    async def __call__(self, agent: str, model: str, result: TurnResult) -> None:
        """The same, once the turn's end is written → the spend notices."""
        ...


Looped = Callable[[str, str, Loop], None]
"""Told (agent, what its conversation is told, the figures) when the loop
guard holds it (the alerts')."""


class AgentWorker:
    def __init__(
        self,
        services: Services,
        spec: AgentSpec,
        tooling: Tooling,
        next_turn: Callable[[], int],
        *,
        bookings: Scheduler,
        publish: Publish,
        show: Show,
        after_turn: TellAfter,
        client_model: str | None = None,
        looped: Looped | None = None,
    ) -> None:
        self.spec = spec
        self.working = False
        self.turn_lock = asyncio.Lock()
        """Held for the whole of a turn: the agent's turns never overlap,
        whoever asks for them (its own worker, or another agent's scout call)."""
        self._services = services
        self._tooling = tooling
        self._next_turn = next_turn
        self._bookings = bookings
        self._publish = publish
        self._show = show
        self._row_behind = False
        """A turn of its own ended, or a hold was told, and its row is not shown since."""
        self._after_turn = after_turn
        self._wake = asyncio.Event()
        self.settled = asyncio.Event()
        """Set once its first work is done (what waited through a restart
        answered, or nothing was): from then on it waits to be woken."""
        self._told = Told(services)
        """What its conversation was told of its hold, this held spell."""
        self._busy = False
        self._stale = False
        """Told by another plane (`told`): its settings are read again at its
        next look (a gateway agent's, before its next call is admitted too)."""
        self._heard: asyncio.Task[None] | None = None
        """A gateway agent's settings being read again on another plane's notice."""
        self._reading = asyncio.Lock()
        """One read of a gateway agent's settings at a time (`read_if_told`):
        a call admitted meanwhile waits for it, not for the notice's next one."""
        self._turn_task: asyncio.Task[TurnResult] | None = None
        """The running turn, a task of its own so the operator can cut it alone."""
        self._cutting = False
        self.session = Session()
        """Its model session as kept between turns (prompt sections, auto-compact's breaker)."""
        self.client_model = client_model
        """A gateway agent's: the model its client named in its latest call."""
        self.floor_on: date | None = None
        """A gateway agent's: the latest plane's day on which a call of its
        was priced at a floor (`plane.wire.words.FLOOR`); its row says so that day."""
        keep = self._keep_guard if services.guards.keeps(spec.gateway is None) else None
        self.guard = Guard(services.config.guard_of(spec.name), keep=keep)
        """Its loop and stall guard: what its calls did, as digests (kept across
        restarts, and with several planes across its lease's moves)."""
        if (taken := services.guards.give_back(spec.name, self.guard)) is not None:
            self.spec = services.roster.held_as_stored(spec.name, taken.loop)
        self._looped = looped
        self._made: Path | None = None
        """The workspace its turns were last given, made then (`_workspace`)."""

    def wake(self) -> None:
        self._wake.set()

    def told(self) -> None:
        """Another plane of the fleet told this one, which runs it, that it
        has work, or that the operator paused or resumed it there: its
        settings are read again at its next look, even with nothing waiting,
        and its row shown if they changed (this plane's clients would show it
        as it was until its next message). A gateway agent, which every plane
        serves, is told so on every plane when one holds it in a loop or the
        operator resumes it there: read again at once, and before its next
        call is admitted here if that comes first."""
        self._stale = True
        self._wake.set()
        if self.spec.gateway is not None and self._heard is None:  # no worker runs it
            self._heard = asyncio.create_task(self._read_told(), name=f"told:{self.spec.name}")

    async def _read_told(self) -> None:
        """A gateway agent's settings read again now that another plane told
        of a change, and its row shown if they changed: this plane's clients
        see it held (or resumed) before its client calls here. The store
        away: read before its next call, or told again at the next renewal."""
        try:
            while self._stale:  # told again meanwhile: read again
                if await self.read_if_told():
                    await self._publish(self.spec.name)
        except Exception as exc:
            log.debug("%s: its settings could not be read again: %s", self.spec.name, exc)
        finally:
            self._heard = None

    async def read_if_told(self) -> bool:
        """A gateway agent's settings read again if another plane told of a
        change since they were last read (its loop guard's hold, a resume):
        whether they changed. Alone on its store, nothing is ever told, and
        nothing is read."""
        if not self._stale and not self._reading.locked():
            return False
        async with self._reading:
            if not self._stale:
                return False
            self._stale, before = False, self.spec
            self._told.forget()  # the plane that held it may have said so already
            try:
                await self._as_stored()
            except BaseException:
                self._stale = True  # read at the next call, or the next notice
                raise
            return self.spec != before

    def _keep_guard(self, kept: Kept | None) -> None:
        """What its guard keeps, under its name now (a rename moves it), and
        under the lease its turn runs under (with several planes): written
        only while this plane still holds it at that epoch."""
        name = self.spec.name
        fence = FENCE.get()
        if fence is None or fence.agent != name:  # not its own turn's (another's scout call)
            fence = self._services.ownership.fence(name)
        self._services.guards.keep(name, kept, fence)

    def _gate_inputs(self) -> tuple[int, AgentSpec]:
        """What the gate's answer depends on besides the spend: every ceiling
        (by its change count) and the agent's spec (its pause)."""
        return self._services.gate.ceilings.changes, self.spec

    @property
    def model(self) -> str | None:
        """The model its calls use. A gateway agent's is the one its client
        named in its latest call; before one, the model its block names or its
        provider offers (None: neither: the defaults' model may be another
        provider's, which no call of its will use)."""
        spec, services = self.spec, self._services
        if spec.gateway is None:
            return spec.model
        if self.client_model is not None:
            return self.client_model
        block = services.config.agents.get(spec.name)
        named = block is not None and block.model is not None
        offered = spec.model in services.config.providers[spec.provider].models
        return spec.model if named or offered else None

    async def hold(
        self, fleet_spent: Decimal | None = None, group_spent: dict[str, Decimal] | None = None
    ) -> Hold | None:
        """Why it takes no turn now (None: it may). A gateway agent is held by
        what it has settled, not by its calls in flight (the gateway weighs those)."""
        spec = self.spec
        if (held := self.operators_hold) is not None:
            return held
        model = self.model
        if spec.fallback is not None:  # the spend is read only when it may step down
            model = self.stepped_down(await self._services.ledger.spend_today(spec.name))
        known = model is None or self._services.pricer.is_known(model)
        return await self._services.gate.hold(
            spec.name,
            price_known=known,
            model=model or spec.model,
            fleet_spent=fleet_spent,
            group_spent=group_spent,
            settled_only=spec.gateway is not None,
            floor_priced=self.floor_today,
        )

    def stepped_down(self, spent: Decimal) -> str | None:
        """The model its turns use at `spent` today: its own, or past its
        fallback's ratio the fallback, whose price the gate weighs then (a
        fallback with no price is never a way to spend uncounted under a
        ceiling). A gateway agent's is weighed as its call is admitted."""
        spec, fallback = self.spec, self.spec.fallback
        if fallback is None or spec.gateway is not None:
            return self.model
        ceiling = self._services.gate.ceilings.of(spec.name)
        return fallback.model if steps_down(spent, ceiling, fallback.at) else self.model

    @property
    def floor_today(self) -> bool:
        """Whether a call of its was priced at a floor on the plane's day (a
        gateway agent's): its spend today is at least its figure, the rest
        unpriced, as its row, its hold and its notices say (`+$?`)."""
        return self.floor_on is not None and self.floor_on == self._services.ledger.day()

    @property
    def looping(self) -> Looping | None:
        """The loop guard's hold on it, until the operator resumes it."""
        loop = self.spec.loop
        return None if loop is None else Looping(self.spec.name, loop)

    @property
    def operators_hold(self) -> Paused | Looping | None:
        """The hold only the operator ends: paused (a loop guard's hold the
        store could not read keeps it so too), else its loop guard's."""
        return Paused(self.spec.name) if self.spec.paused else self.looping

    async def hold_loop(self, loop: Loop) -> Looping:
        """The guard found `loop`: held from now on, across restarts, until the
        operator resumes it, and the alerts told. Its conversation is told by
        whoever tells its holds (the look after a turn, a refused call)."""
        name = self.spec.name
        self.spec = await self._services.roster.change(name, loop=loop)
        self._tell_planes()
        held = Looping(name, loop)
        if self._looped is not None:
            self._looped(name, notices.why(held, self._services.clock.now()), loop)
        return held

    def _tell_planes(self) -> None:
        """A gateway agent just held: every other plane of the fleet told,
        since its client may call any of them (a leased agent's hold is
        read by the plane that takes its lease next)."""
        ownership = self._services.ownership
        if self.spec.gateway is not None and ownership.plane is not None and ownership.notify:
            ownership.notify(self.spec.name)

    def hold_known(
        self,
        spent: Decimal,
        fleet_spent: Decimal,
        group_spent: Mapping[str, Decimal],
        resets_at: datetime,
    ) -> Hold | None:
        """`hold`, from the figures a snapshot read once for all (`Gate.hold_known`):
        not for a gateway agent, whose calls in flight are weighed apart."""
        spec = self.spec
        if (held := self.operators_hold) is not None:
            return held
        model = self.stepped_down(spent)
        return self._services.gate.hold_known(
            spec.name,
            spent=spent,
            price_known=model is None or self._services.pricer.is_known(model),
            model=model or spec.model,
            fleet_spent=fleet_spent,
            group_spent=group_spent,
            resets_at=resets_at,
        )

    async def run(self, *, look: bool = True) -> None:
        """Forever: wait to be woken, then work until nothing is left or held.

        `look`: look first for what waited through a restart. False when the
        start knows nothing waits for it (no message, no booking, no hold
        told): most of a fleet, whose first looks were most of a start's CPU;
        its first message or booking wakes it as usual."""
        await self._keep_ambient()
        if look:
            self._wake.set()  # answer what waited through a restart
        else:
            self.settled.set()
        while True:
            await self._wake.wait()
            self._wake.clear()
            self._busy = True
            try:
                await self._work()
            except LeaseLost as lost:  # another plane runs it now, and answers
                log.info("%s: %s; its turn stopped here", self.spec.name, lost)
            except Exception as exc:
                if not unreachable(exc):
                    log.exception("worker for %s", self.spec.name)
                    await self._failed()
                else:  # no failure inside the plane: looked at again at the fleet's next tick
                    log.warning("%s: its turn stopped: %s", self.spec.name, exc)
            finally:
                self._busy = False
                self.settled.set()

    async def _failed(self) -> None:
        """Say that the turn failed — unless saying it fails too (the store
        away, or the agent taken by another plane meanwhile): then the log
        has it, and the worker goes on to its next wake. Told under the
        agent's lease, as its turn's writes are: a plane that no longer runs
        the agent (stalled, cut off, taken over) tells nothing."""
        ownership, name = self._services.ownership, self.spec.name
        if not ownership.owns(name):
            log.warning("%s: its turn failed on a plane that no longer runs it", name)
            return
        fence = FENCE.set(ownership.fence(name))
        try:
            await self.tell(notices.TURN_FAILED)
            if self._row_behind:
                self._row_behind = False
                await self._publish(name)
        except Exception as exc:
            log.warning("%s: the failure could not be told: %s", name, exc)
        finally:
            FENCE.reset(fence)

    def hold_changed(self) -> None:
        """Paused, resumed, or its ceiling changed: look again (a hold for
        another reason is told; the same one is not said twice)."""
        self.wake()

    async def interrupt(self) -> bool:
        """Cut the running turn; return once the conversation says what it
        cost (False: no turn of its own was running)."""
        task = self._turn_task
        if task is None or task.done() or not task.cancel():
            return False
        self._cutting = True
        async with self.turn_lock:  # released once the cut turn is told
            pass
        return True

    @property
    def idle(self) -> bool:
        """Nothing in flight and nothing about to be: no turn, no pending wake."""
        return not (self._busy or self._wake.is_set() or self.turn_lock.locked())

    async def tell_hold(self, hold: Hold) -> ConversationMessage | None:
        """Say why the agent is quiet, once per held spell and reason."""
        return await self._told.hold(self.spec.name, hold)

    async def call_held(self, hold: Hold | None) -> None:
        """A gateway agent's call refused by `hold`, said once a held spell
        (None: its call went through, and the spell is over)."""
        if hold is None:
            await self.unheld()
        elif await self.tell_hold(hold):
            await self._publish(self.spec.name)

    async def unheld(self) -> None:
        """The held spell is over: the next hold is told."""
        await self._told.remember(self.spec.name, None)

    async def _work(self) -> None:
        """Take turns while there is work and the gate lets the agent go.

        The gate is asked with the turn lock held, right before the turn: a
        turn someone else ran meanwhile (another agent's scout call) has
        already spent, and a check made before waiting for the lock would
        let this turn start over the ceiling."""
        while True:
            async with self.turn_lock:
                fence = FENCE.set(self._services.ownership.fence(self.spec.name))
                operator = OPERATOR.set(False)  # until a cut makes it the operator's (`_cut`)
                try:
                    if not await self._next():
                        return
                except LedgerError as error:
                    await self._stopped_before_turn(error)
                    return
                finally:
                    OPERATOR.reset(operator)
                    FENCE.reset(fence)

    async def _stopped_before_turn(self, error: LedgerError) -> None:
        """The gate could not be asked (the ledger unreadable: the store away,
        say): said and shown, unless that fails too. Then the log has it and
        the next wake asks again; it is no failure inside the plane, whose
        notice (`_failed`) would be told once the store is back."""
        try:
            await self.unrecorded(error)
            self._row_behind = False
            await self._publish(self.spec.name)
        except Exception as exc:
            log.warning("%s: the stop could not be told: %s", self.spec.name, exc)

    async def _next(self) -> bool:
        """One step of `_work`, under the turn lock: a turn if there is work
        and no hold. False when there is nothing more to do now."""
        services, name = self._services, self.spec.name
        if not services.ownership.owns(name):
            if self._stale:  # held or let go where it runs: its row here says so too
                self._stale, before = False, self.spec
                await self._as_stored()
                self._row_behind = self._row_behind or self.spec != before
            if self._row_behind:  # its last turn ended here, or its hold moved: shown as it is now
                self._row_behind = False
                await self._publish(name)
            return False  # another plane runs it: what waits is in the store, for its owner
        # Its lease just taken: its guard goes on from what the plane before
        # kept, and it is held as the store had it then (a resume since, on
        # any plane, is read at once: held, it looks at the store).
        taken = services.guards.give_back(name, self.guard)
        if taken is not None:
            self.spec = services.roster.held_as_stored(name, taken.loop)
        if self._stale or (self.spec.loop is not None and services.ownership.plane is not None):
            self._stale, before = False, self.spec
            await self._as_stored()
            if self.spec != before:  # paused or resumed through another plane: shown here too
                self._row_behind = True
        asked = self._gate_inputs()
        hold = await self.hold()
        if hold is None:
            await self.unheld()
        waiting = await services.conversation.waiting(name)
        due = await self._bookings.due(name)
        if not waiting and not due:
            await self._caught_up(hold)
            return False
        if services.ownership.plane is not None:
            await self._as_stored()  # paused, or resumed, through another plane
        if self._gate_inputs() != asked:
            # A ceiling set or a pause while the gate was asked or what waits
            # was read: the answer may be stale, so all of it is asked again
            # (with no await between this look and the turn). The gate's
            # answer is otherwise kept: asked again after the reads, a day
            # that turned meanwhile would start a turn on what was read
            # before the rest arrived.
            return True
        if hold is not None:
            # Told already (by the send that woke it, or earlier in this spell):
            # the row is as the clients last saw it, so it is not sent again.
            if await self.tell_hold(hold) is not None:
                self._row_behind = True
            await self._caught_up(hold)
            return False
        try:
            await self.take_turn(incoming(waiting, due), answering=waiting, due=due)
        except LedgerError:
            return False  # said, and the turn finished: the next wake tries again
        return True

    async def _as_stored(self) -> None:
        """On a plane of a fleet, the agent as the store has it: the operator
        may have paused or resumed it through another plane (which said so
        in its conversation, and told this one). Read while it is held by
        the loop guard, and as the last read before each turn: a pause
        committed before that read stops the turn (a lost notice costs
        nothing). A loop hold lifted there lifted the guard's history with
        it: its count here starts afresh too, as a resume here starts it,
        and nothing of the old count is written again."""
        held = self.spec.loop is not None
        self.spec = await self._services.roster.reread(self.spec.name)
        if held and self.spec.loop is None:
            self.guard.forget()

    async def _caught_up(self, hold: Hold | None) -> None:
        """The row, if the clients' is behind (a turn of its own ended since,
        or a hold was told), shown with the gate's answer just asked."""
        if self._row_behind:
            self._row_behind = False
            await self._show(self.spec.name, hold)

    async def unrecorded(self, error: LedgerError) -> None:
        """Money that could not be recorded stops the turn, and says so. The
        next turn tries again; its first call is written before it is sent,
        so nothing is spent while the ledger refuses."""
        log.error("%s: %s", self.spec.name, error, exc_info=error)
        await self.tell(notices.unrecorded(error))

    async def take_turn(
        self,
        incoming: str,
        *,
        workspace: Path | None = None,
        answering: Sequence[ConversationMessage] = (),
        due: Sequence[Booking] = (),
        own: bool = True,
    ) -> TurnResult:
        """The one way a turn is taken, its turn lock held by the caller: its
        start shown, the turn run on `incoming` (in `workspace`, else the
        agent's own), then its answer, cost line and end (`finish`).

        `own`: the worker's own turn, which the operator may cut. Another
        agent's question (the scout's turn) is the asker's to wait for, so it
        cannot be cut. Money that could not be recorded, anywhere in the
        turn, stops it: said, the turn finished, and raised to the caller —
        an asking agent's turn stops too."""
        services, name = self._services, self.spec.name
        workspace = self._workspace(workspace)
        number = self._next_turn()
        self.working = True
        services.emit(TurnStarted(agent=name, turn=number))
        finishing = False
        try:
            await self._publish(name)
            asked = bool(answering) or not own  # someone's words, not its own booking
            result = await self._run(number, incoming, workspace, own, asked)
            finishing = True
            # Its own turn's last row is shown by the look that follows it
            # (`_next`), which asks the gate anyway: not asked twice.
            await self.finish(number, result, answering=answering, due=due, show=not own)
            self._row_behind = own
        except LeaseLost:
            raise  # another plane answers: nothing of this turn is written
        except LedgerError as error:
            self.working = False
            await self._unrecorded_turn(number, error, answering, due)
            raise
        except Exception:
            # Failed inside the plane: finished as failed (unless it failed
            # finishing), and the notice that says so (the caller's) is its
            # answer, as a retry now would spend again.
            self.working = False
            if not finishing:
                await self.finish(number, TurnResult(ok=False), answering=answering, due=due)
            raise
        return result

    def _workspace(self, given: Path | None) -> Path:
        """Where the turn works (`given`, else the agent's own), made if it is
        not yet: by the agent's first turn, not at the plane's start, which
        would make a directory for each of a fleet's agents, most of them
        never used (and made again, once, after a rename)."""
        workspace = given or self.spec.workspace
        if workspace != self._made:
            self._services.home.make_dir(workspace)
            self._made = workspace
        return workspace

    async def _run(
        self, number: int, incoming: str, workspace: Path | None, own: bool, asked: bool
    ) -> TurnResult:
        turn = Turn(
            self._services,
            self.spec,
            number,
            self._tooling,
            workspace,
            session=self.session,
            on_spend=self._publish,
            guard=self.guard,
            on_loop=self.hold_loop,
            remembers=own,
        )
        kept: list[Write[Any]] = []
        try:
            if own:  # its writes kept: a cut hurries those still queued (`_cut`)
                context = contextvars.copy_context()
                context.run(KEPT.set, kept)
                task = asyncio.create_task(turn.run(incoming, asked=asked), context=context)
                self._turn_task = task
            else:
                task = asyncio.create_task(turn.run(incoming, asked=asked))
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if own and self._cutting and not (current is not None and current.cancelling()):
                self.working = False
                return await self._cut(turn.result, kept)
            # Cut by a stop: nothing answered it, so what it saw stays waiting
            # and its bookings open; the next start says what the call in
            # flight counted and takes the turn again.
            raise
        finally:
            self.working = False
            if own:
                self._turn_task = None
                self._cutting = False

    async def _unrecorded_turn(
        self,
        number: int,
        error: LedgerError,
        answering: Sequence[ConversationMessage],
        due: Sequence[Booking],
    ) -> None:
        """A turn whose money could not be recorded: said, and finished as
        failed (what it answered is answered by the notice: a retry now would
        spend again). Saying so may fail too (the store away): the log has it."""
        try:
            await self.unrecorded(error)
            await self.finish(number, TurnResult(ok=False), answering=answering, due=due)
        except Exception:
            log.exception("%s: telling of an unrecorded turn", self.spec.name)

    async def _cut(self, so_far: TurnResult, kept: list[Write[Any]]) -> TurnResult:
        """The operator cut the turn: the calls in flight count their estimates,
        what it was answering is answered by the notice (taking it again would
        undo the cut), and the conversation says what the turn cost. `kept`:
        the writes the turn put."""
        services = self._services
        # The operator waits for the cut to be told: from here to the turn's
        # end its writes and wake-ups go ahead of the agents' traffic
        # (`_work` resets it once the turn lock is let go). What the turn
        # itself queued (the call it was opening, its cost) is hurried ahead
        # of the cut: then nothing of the turn is still to be written.
        OPERATOR.set(True)
        cut = await services.ledger.interrupt_open(self.spec.name, after=kept)
        cost = so_far.cost + cut.estimate_usd
        unpriced = so_far.unpriced or cut.unpriced > 0
        if unpriced:  # unknown never reads as free: no $0.00, no cost carried
            notice = notices.unpriced_cut(self.spec.model, cut)
            await services.add_message(self.spec.name, "plane", notice)
        else:
            notice = notices.interrupted(cost, cut)
            await services.add_message(self.spec.name, "plane", notice, cost_usd=cost)
        # calls=0: the notice is this turn's cost line (it carries the cost).
        return TurnResult(cost=cost, usage=so_far.usage, ok=False, unpriced=unpriced)

    async def _keep_ambient(self) -> None:
        ambient = self.spec.ambient
        if ambient is not None:
            every = timedelta(minutes=ambient.every_minutes)
            await self._bookings.keep_ambient(self.spec.name, every, ambient.note)

    async def finish(
        self,
        number: int,
        result: TurnResult,
        *,
        answering: Sequence[ConversationMessage] = (),
        due: Sequence[Booking] = (),
        show: bool = True,
    ) -> None:
        """The turn's answer and cost line, then the events (and its row,
        unless `show` is False: the caller shows it). What the turn answered
        is marked so only now, in the commit of its answer and its cost line:
        a plane killed before it answers the question after the restart, and
        never leaves one marked answered without its answer; another plane
        of the fleet never reads it answered without its cost line."""
        services, name = self._services, self.spec.name
        model = result.model or self.spec.model
        # A turn that failed answered with its notices; one held kept them waiting.
        questions = [m.id for m in answering] if result.answer or not result.held else []
        cost = await self._after_turn.line(name, model, result) if result.calls else None
        for said in await services.conversation.end_turn(name, result.answer, questions, cost):
            services.emit(MessageAppended(message=said))
        if result.held_by is not None:  # the turn said why it stopped: said once a spell
            await self._told.remember(name, result.held_by)
        await self._bookings.done(list(due))
        await self._keep_ambient()
        if result.calls or result.cost:  # a cut turn's spend, too, may reach the ceiling
            await self._after_turn(name, model, result)
        if (looping := self.looping) is not None:
            # Said before the turn's end, not by the look after it: whoever
            # waits for the end (`plane send --wait`) reads why it stopped.
            await self.tell_hold(looping)
        services.emit(
            TurnFinished(
                agent=name,
                turn=number,
                cost_usd=result.cost,
                usage=result.usage,
                ok=result.ok,
                held=result.held,
            )
        )
        if show:
            await self._publish(name)

    async def tell(self, notice: str) -> ConversationMessage:
        """The plane tells the agent's conversation `notice` (`plane.agents.notices`)."""
        return await self._services.add_message(self.spec.name, "plane", notice)


def incoming(waiting: list[ConversationMessage], due: list[Booking]) -> str:
    """What the turn's user message says: everything that waited, marked with
    when it arrived when it waited through a hold (of any kind: a pause, the
    ceiling, the fleet's, an unpriced model; the message does not say which)."""
    parts = []
    for message in waiting:
        if message.held:
            when = f"{message.at:%Y-%m-%d %H:%M} UTC"
            parts.append(f"[arrived {when}, while you were held] {message.text}")
        else:
            parts.append(message.text)
    for booking in due:
        booked = f"{booking.booked_at:%Y-%m-%d %H:%M} UTC"
        kind = "ambient turn" if booking.ambient else f"a turn you booked at {booked}"
        parts.append(f"[{kind}] {booking.note}")
    return "\n\n".join(parts)
