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
`publish` shows its row, `after_turn` says a turn's cost and the spend
notices, the scheduler keeps its bookings. None of them is the crew.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from decimal import Decimal
from sqlite3 import Connection
from typing import TYPE_CHECKING

from plane.agents.roster import AgentSpec
from plane.agents.scheduler import Booking, Scheduler
from plane.agents.services import Services
from plane.agents.turn import Turn, TurnResult
from plane.errors import LeaseLost, LedgerError
from plane.history.conversation import Conversation
from plane.money.gate import Hold
from plane.money.ledger import Interrupted
from plane.store.fence import FENCE
from plane.wire.protocol import (
    ConversationMessage,
    MessageAppended,
    MessageKind,
    TurnFinished,
    TurnStarted,
)
from plane.wire.words import UNPRICED, turn_cost

if TYPE_CHECKING:
    from plane.agents.toolbox import Tooling

log = logging.getLogger(__name__)


Publish = Callable[[str], Awaitable[object]]
"""(agent) → its row is shown to the clients as it is now."""
AfterTurn = Callable[[str, TurnResult], Awaitable[None]]
"""(agent, what its turn did) → the cost line and the spend notices."""


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
        after_turn: AfterTurn,
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
        self._after_turn = after_turn
        self._wake = asyncio.Event()
        self._told_hold: str | None = None
        """The reason of the hold last told (None: not held since), as the
        store keeps it across restarts; read from there first (`_last_told`)."""
        self._told_at: int | None = None
        """`Ownership.changes` when `_told_hold` was read (None: not yet)."""
        self._busy = False
        self._turn_task: asyncio.Task[TurnResult] | None = None
        """The running turn, a task of its own so the operator can cut it alone."""
        self._cutting = False

    def wake(self) -> None:
        self._wake.set()

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
        if (used := services.client_models.get(spec.name)) is not None:
            return used
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
        if spec.paused:
            return Hold("paused", paused_notice(spec.name))
        model = self.model
        known = model is None or self._services.pricer.is_known(model)
        return await self._services.gate.hold(
            spec.name,
            price_known=known,
            model=model or spec.model,
            fleet_spent=fleet_spent,
            group_spent=group_spent,
            settled_only=spec.gateway is not None,
        )

    async def run(self) -> None:
        """Forever: wait to be woken, then work until nothing is left or held."""
        await self._keep_ambient()
        self._wake.set()  # answer what waited through a restart
        while True:
            await self._wake.wait()
            self._wake.clear()
            self._busy = True
            try:
                await self._work()
            except LeaseLost as lost:  # another plane runs it now, and answers
                log.info("%s: %s; its turn stopped here", self.spec.name, lost)
            except Exception:
                log.exception("worker for %s", self.spec.name)
                await self._failed()
            finally:
                self._busy = False

    async def _failed(self) -> None:
        """Say that the turn failed — unless saying it fails too (the store
        away, or the agent taken by another plane meanwhile): then the log
        has it, and the worker goes on to its next wake."""
        try:
            await self.say("plane", "The turn failed inside the plane; see plane.log.")
        except Exception as exc:
            log.warning("%s: the failure could not be told: %s", self.spec.name, exc)

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
        if await self._last_told() == hold.reason:
            return None
        self._told_hold = hold.reason  # before the await: a send and the worker race to say it
        said = await self.say("plane", hold.notice)
        await self._services.conversation.remember_hold(self.spec.name, hold.reason)
        return said

    async def _last_told(self) -> str | None:
        """Read from the store once, and again whenever the agents this plane
        runs have changed (another plane may have told, or ended, a hold)."""
        ownership = self._services.ownership
        if self._told_at != ownership.changes:
            at = ownership.changes
            told = await self._services.conversation.told_hold(self.spec.name)
            if self._told_at != at:
                self._told_hold, self._told_at = told, at
        return self._told_hold

    async def unheld(self) -> None:
        """The held spell is over: the next hold is told."""
        await self._remember_hold(None)

    async def _remember_hold(self, reason: str | None) -> None:
        """What was last told, kept in the store too: a restart does not say it again."""
        if await self._last_told() != reason:
            self._told_hold = reason
            await self._services.conversation.remember_hold(self.spec.name, reason)

    async def _work(self) -> None:
        """Take turns while there is work and the gate lets the agent go.

        The gate is asked with the turn lock held, right before the turn: a
        turn someone else ran meanwhile (another agent's scout call) has
        already spent, and a check made before waiting for the lock would
        let this turn start over the ceiling."""
        while True:
            async with self.turn_lock:
                fence = FENCE.set(self._services.ownership.fence(self.spec.name))
                try:
                    if not await self._next():
                        return
                except LedgerError as error:
                    await self.unrecorded(error)
                    await self._publish(self.spec.name)
                    return
                finally:
                    FENCE.reset(fence)

    async def _next(self) -> bool:
        """One step of `_work`, under the turn lock: a turn if there is work
        and no hold. False when there is nothing more to do now."""
        services, name = self._services, self.spec.name
        if not services.ownership.owns(name):
            return False  # another plane runs it: what waits is in the store, for its owner
        asked = self._gate_inputs()
        hold = await self.hold()
        if hold is None:
            await self.unheld()
        waiting = await services.conversation.waiting(name)
        due = await self._bookings.due(name)
        if not waiting and not due:
            return False
        if self._gate_inputs() != asked:
            # A ceiling set or a pause while the gate was asked or what waits
            # was read: the answer may be stale, so all of it is asked again
            # (with no await between this look and the turn). The gate's
            # answer is otherwise kept: asked again after the reads, a day
            # that turned meanwhile would start a turn on what was read
            # before the rest arrived.
            return True
        if hold is not None:
            if hold.settles is not None:  # held by calls in flight: again once one settles
                services.ledger.after_close(hold.settles).add_done_callback(lambda _: self.wake())
            # Told already (by the send that woke it, or earlier in this spell):
            # the row is as the clients last saw it, so it is not sent again.
            if await self.tell_hold(hold) is not None:
                await self._publish(name)
            return False
        await self._turn(waiting, due)
        return True

    async def unrecorded(self, error: LedgerError) -> None:
        """Money that could not be recorded stops the turn, and says so. The
        next turn tries again; its first call is written before it is sent,
        so nothing is spent while the ledger refuses."""
        log.error("%s: %s", self.spec.name, error, exc_info=error)
        await self.say("plane", unrecorded_notice(error))

    async def _turn(self, waiting: list[ConversationMessage], due: list[Booking]) -> None:
        services, name = self._services, self.spec.name
        number = self._next_turn()
        self.working = True
        services.emit(TurnStarted(agent=name, turn=number))
        await self._publish(name)
        turn = Turn(services, self.spec, number, self._tooling, on_spend=self._publish)
        try:
            self._turn_task = asyncio.create_task(turn.run(incoming(waiting, due)))
            result = await self._turn_task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._cutting and not (current is not None and current.cancelling()):
                self.working = False
                await self._cut(number, turn.result, waiting, due)
                return
            # Cut by a stop: nothing answered it, so what it saw stays waiting
            # and its bookings open; the next start says what the call in
            # flight counted and takes the turn again.
            raise
        except LeaseLost:
            raise  # another plane answers: nothing of this turn is written
        except Exception:
            # Failed inside the plane, or its spend could not be recorded: the
            # notice that says so is its answer (a retry now would spend again).
            await self._services.conversation.answered([m.id for m in waiting])
            await self._bookings.done(due)
            await self._keep_ambient()
            raise
        finally:
            self.working = False
            self._turn_task = None
            self._cutting = False
        await self.finish(number, result, answering=waiting, due=due)

    async def _cut(
        self,
        number: int,
        so_far: TurnResult,
        waiting: list[ConversationMessage],
        due: list[Booking],
    ) -> None:
        """The operator cut the turn: the calls in flight count their estimates,
        what it was answering is answered by the notice (taking it again would
        undo the cut), and the conversation says what the turn cost."""
        services = self._services
        cut = await services.ledger.interrupt_open(self.spec.name)
        cost = so_far.cost + cut.estimate_usd
        unpriced = so_far.unpriced or cut.unpriced > 0
        # calls=0: the notice is this turn's cost line (it carries the cost).
        result = TurnResult(cost=cost, usage=so_far.usage, ok=False, unpriced=unpriced)
        if unpriced:  # unknown never reads as free: no $0.00, no cost carried
            notice = unpriced_cut_notice(self.spec.model, cut)
            await services.say(self.spec.name, "plane", notice)
        else:
            notice = interrupted_notice(cost, cut)
            await services.say(self.spec.name, "plane", notice, cost_usd=cost)
        await self.finish(number, result, answering=waiting, due=due)

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
    ) -> None:
        """The turn's answer and cost line, in that order, then the events.
        What the turn answered is marked so only now, in the answer's own
        commit: a plane killed before it answers the question after the
        restart, and never leaves one marked answered without its answer."""
        services, name = self._services, self.spec.name
        questions = [m.id for m in answering]
        if result.answer:
            answer = await services.conversation.answer(name, result.answer, questions)
            services.emit(MessageAppended(message=answer))
        elif not result.held:  # a turn that failed: its notices are what it answered
            await services.conversation.answered(questions)
        if result.held:  # the turn said why it stopped: said once a spell
            await self._remember_hold(result.held_by)
        await self._bookings.done(list(due))
        await self._keep_ambient()
        if result.calls:
            await self._after_turn(name, result)
        services.emit(
            TurnFinished(
                agent=name, turn=number, cost_usd=result.cost, usage=result.usage, ok=result.ok
            )
        )
        await self._publish(name)

    async def say(self, kind: MessageKind, text: str) -> ConversationMessage:
        return await self._services.say(self.spec.name, kind, text)


def unrecorded_notice(error: LedgerError) -> str:
    return (
        f"The turn stopped. {error} No LLM call is made while the ledger cannot record "
        "spend; see plane.log."
    )


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


def paused_notice(agent: str) -> str:
    return (
        f"{agent} is paused: it takes no turn until it is resumed (p in the TUI, "
        f"`plane resume {agent}`), and answers then what waited. Its ceiling is kept."
    )


def interrupted_notice(cost: Decimal, cut: Interrupted) -> str:
    """What the conversation says of a turn the operator cut."""
    said = f"Interrupted by the operator. The cut-off turn cost {turn_cost(cost)}"
    if cut.calls == 1:
        said += f", the call in flight counted at its estimate, {turn_cost(cut.estimate_usd)}"
    elif cut.calls:
        said += (
            f", the {cut.calls} calls in flight counted at their estimates, "
            f"{turn_cost(cut.estimate_usd)}"
        )
    return said + "."


def unpriced_cut_notice(model: str, cut: Interrupted) -> str:
    """What the conversation says of a cut turn on a model with no price."""
    said = (
        "Interrupted by the operator. The cut-off turn cost is not known: "
        f"no price is known for {model}"
    )
    if cut.calls == 1:
        said += ", so its call in flight is not counted"
    elif cut.calls:
        said += f", so its {cut.calls} calls in flight are not counted"
    return said + "."


def cut_turn_notice(cut: Interrupted, waiting: int) -> str:
    """What an agent's conversation says after a restart found its turn cut.
    A call of a model with no price counts no estimate: said so, never $0.00."""
    if cut.unpriced == cut.calls:
        counted = (
            "the call in flight is not counted"
            if cut.calls == 1
            else f"the {cut.calls} calls in flight are not counted"
        ) + ": no price is known for its model"
    elif cut.calls == 1:
        counted = f"the call in flight is counted at its estimate, {turn_cost(cut.estimate_usd)}"
    else:
        counted = (
            f"the {cut.calls} calls in flight are counted at their estimates, "
            f"{turn_cost(cut.estimate_usd)}"
        )
    if cut.unpriced and cut.unpriced < cut.calls:
        counted += f" ({cut.unpriced} {UNPRICED}, not counted)"
    notice = f"The plane stopped during this agent's turn; {counted}."
    if waiting:
        notice += " It now answers what it had not answered."
    return notice


def tell_cut_turns(conversation: Conversation, tx: Connection, cut: dict[str, Interrupted]) -> None:
    """At start-up, in the transaction that marks the calls interrupted: each
    agent whose turn a stop cut says so, with what was counted, so its row
    and its feed agree."""
    for agent, interrupted in cut.items():
        waiting = conversation.waiting_within(tx, agent)
        notice = cut_turn_notice(interrupted, waiting)
        cost = None if interrupted.unpriced == interrupted.calls else interrupted.estimate_usd
        conversation.append_within(tx, agent, "plane", notice, cost_usd=cost)
