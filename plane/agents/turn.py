"""One turn: prompt → model → tool calls → results → model … → an answer.

A turn is bounded by `defaults.max_calls_per_turn` LLM calls, which is what
bounds a ceiling's overshoot to one turn. Every call goes through
`metered_call` (ledger before anything is shown). Tool results reach the
model through the toolbox and compression; people see a one-line summary.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from plane.agents import fit, notices
from plane.agents.echo import echoes
from plane.agents.guard import (
    BOOKKEEPING,
    Guard,
    Loop,
    Seen,
    Step,
    call_signature,
    changes_nothing,
    seen,
    workspace_digest,
)
from plane.agents.metering import Metered, metered_call
from plane.agents.prompt import BASE, system_prompt
from plane.agents.roster import AgentSpec
from plane.agents.services import Services
from plane.agents.session import Saved, Session, new_session
from plane.agents.toolbox import Selection, Tooling
from plane.clock import day_of
from plane.economy.autocompact import (
    SUMMARY_ASK,
    over_budget,
    recent_files,
    replacement,
    save,
)
from plane.economy.compaction import compact
from plane.economy.repomap.map import layer
from plane.errors import ContextOverflow, ProviderError
from plane.money.ledger import Full
from plane.money.limits import steps_down
from plane.providers.base import ChatMessage, CompletionRequest, ToolCall, ToolSpec
from plane.wire.protocol import ConversationMessage, Usage

SUMMARY_CHARS = 160
PLANE_VOICE = frozenset({"set_own_limit"})
"""Tools whose result is a sentence of the plane's (the ceiling's refusal
or confirmation), not data: an answer repeating it is an echo (`echo.py`)."""


@dataclass
class TurnResult:
    answer: str = ""
    cost: Decimal = Decimal(0)
    usage: Usage = field(default_factory=Usage)
    ok: bool = True
    unpriced: bool = False
    calls: int = 0
    """LLM calls made, failed ones included."""
    saved_chars: int = 0
    """What compression kept out of the model's input this turn."""
    compacted_chars: int = 0
    """What compaction took out of the model's history this turn (said as
    its own, not compression's: either lever may be off)."""
    overflowed: bool = False
    """The provider refused the prompt as longer than the model's context:
    nothing of this turn is kept in the model's history."""
    held: bool = False
    """Stopped by the fleet's ceiling (or its group's) at a call's admission,
    or by the loop guard: what it was answering stays waiting, for the turn
    after the hold."""
    model: str = ""
    """The model its last call used (its fallback's, once it stepped down)."""
    held_by: str | None = None
    """The reason of the hold the turn itself said (None: it said none; the
    worker's look after the turn tells the loop guard's), said once a spell."""


class Turn:
    def __init__(
        self,
        services: Services,
        spec: AgentSpec,
        number: int,
        tooling: Tooling,
        workspace: Path | None = None,
        *,
        session: Session,
        on_spend: Callable[[str], Awaitable[object]],
        guard: Guard,
        on_loop: Callable[[Loop], Awaitable[object]],
        remembers: bool = True,
    ) -> None:
        self.services = services
        self._remembers = remembers
        """The turn reads and extends the agent's history. Not when it answers
        another agent (the scout's turn): what it read for one asker, in another's
        workspace, must not be in its input for the next."""
        self._guard = guard
        """The agent's loop guard, its worker's: shown each call as it ends."""
        self._on_loop = on_loop
        """The guard found a loop: the agent is held (its worker's `hold_loop`)."""
        self._news = False
        """Its next call answers what someone wrote (the turn's first, answering a message)."""
        self._model, self._provider = spec.model, spec.provider
        """What its calls use: its own model, or near its ceiling its fallback (`_model_now`)."""
        self._session = session
        """The agent's session, its worker's: the prompt sections and the breaker."""
        self._on_spend = on_spend
        """After each metered call (the agent's name): its row shows the spend at once."""
        self.spec = spec
        self.number = number
        self.tooling = tooling
        self.workspace = workspace or spec.workspace
        self.result = TurnResult()
        self.tools = Selection()
        self._calls_made: dict[tuple[str, str], Seen] = {}
        """Each call made this turn, and its result as the guard saw it."""
        self._still_hold: set[tuple[str, str]] = set()
        """The calls whose results still hold: made this turn, and no other
        call since that may have changed what they read (`Tool.changes_nothing`)."""
        self._repeated = False
        self._plane_said: list[str] = [BASE.format(name=spec.name)]
        """The plane's own sentences in the model's input this turn (its
        prompt, refusals): an answer that only repeats one is not shown."""
        self._layers: tuple[str, ...] = ()
        self._summarised = False

    async def run(self, incoming: str, *, asked: bool = False) -> TurnResult:
        """`asked`: the turn answers what someone wrote (a message, another
        agent's question), which is news to the loop guard; a booking is not."""
        self._news = asked
        history = await self._history() if self._remembers else []
        self._layers = await self._prompt_layers(fresh=not history or self._summarised)
        new = [ChatMessage("user", incoming)]
        self.tools = await self.tooling.session(self.spec, history + new, self.workspace)
        tools = self.tooling.specs(self.tools)
        cap = self.services.config.defaults.max_calls_per_turn
        empty = False
        for _ in range(cap):
            self._model, self._provider = await self._model_now()
            metered = await self._call(self._request(history + new, tools))
            if metered is None:
                break
            completion = metered.completion
            if not completion.tool_calls:
                new.append(ChatMessage("assistant", completion.text))
                limit = self.services.config.defaults.max_output_tokens
                empty = not completion.text.strip()
                said = "" if empty else completion.text
                self.result.answer = said + cut_mark(completion.stop_reason, limit)
                # Said, whatever the guard finds: a loop found here holds the next turn.
                await self._watched(metered, answer=completion.text)
                break
            calls = self._first_time(completion.tool_calls)
            if calls or completion.text:
                new.append(ChatMessage("assistant", completion.text, calls))
            for call in calls:
                new.append(await self._tool(call))
            if await self._watched(metered, tools=self._seen(completion.tool_calls)):
                self.result.ok, self.result.held = False, True  # what it answers waits
                break
            if self._repeated:
                # A model calling the same tool again is asked again without
                # tools, so it answers. Nothing is said to it: a sentence of
                # the plane's in its input was what a small model answered with.
                tools = ()
        else:
            await self._tell(notices.capped(cap))
        if self.result.answer and echoes(self.result.answer, self._plane_said):
            self.result.answer = ""
            await self._tell(notices.echoed(self.spec.name))
        elif asked and empty and not self.result.answer:
            # The model answered with nothing: a question left with only a
            # cost line under it reads as an agent that broke.
            await self._tell(notices.empty(self.spec.name))
        if self.result.overflowed:
            # Kept, it would make every later prompt too long as well: the
            # agent would fail each turn on one oversized message or result;
            # and a history too long alone would fail every turn after it.
            window = self.services.config.providers[self.spec.provider].context_window
            saved = await self._new_session() if self._remembers else None
            crowded = None
            if saved is None:
                prompt = system_prompt(self.spec, day_of(self.services.clock.now()), self._layers)
                crowded = fit.crowded(
                    self.services.config, self.spec, prompt, self.tooling.specs(self.tools)
                )
            await self._tell(notices.overflowed(self.spec, window, saved, crowded))
        elif self._remembers:
            await self.services.transcript.extend(self.spec.name, new)
        return self.result

    async def _new_session(self) -> Saved | None:
        """The history saved and a new session started, as /new does."""
        services = self.services
        return await new_session(
            services.transcript, self.spec.name, self.spec.workspace, services.clock.now()
        )

    async def _history(self) -> list[ChatMessage]:
        """The model's history, compacted first when a batch is due."""
        services, agent = self.services, self.spec.name
        history = await services.transcript.load(agent)
        compaction = compact(history, services.config.session)
        if compaction is not None:
            if services.refs is not None:
                await asyncio.to_thread(services.refs.put, compaction.removed)
            await services.transcript.replace(agent, compaction.history)
            self.result.compacted_chars += compaction.saved_chars
            history = compaction.history
        if services.config.session.auto_compact and not self._session.breaker.tripped:
            history = await self._auto_compact(history)
        return history

    async def _auto_compact(self, history: list[ChatMessage]) -> list[ChatMessage]:
        """Summarise the history when it nears the context window (saved first)."""
        services, agent = self.services, self.spec.name
        window = services.config.providers[self.spec.provider].context_window
        if not history:  # nothing to summarise (and no session's tools to open yet)
            return history
        # The session's tools: their schemas are in every call's prompt, and the
        # summary is asked with them, as the calls before it were.
        tools = self.tooling.specs(await self.tooling.session(self.spec, history, self.workspace))
        probe = self._request(history, tools)
        if not over_budget(probe.system, history, window, probe.max_output_tokens, tools):
            return history
        saved = await asyncio.to_thread(save, history, self.workspace, services.clock.now())
        # The same system prompt and tools as the calls before it, so that the summary
        # reads the whole history from the provider's cache instead of paying for it anew.
        self._layers = await self._prompt_layers(fresh=False)
        ask = [*history, ChatMessage("user", SUMMARY_ASK)]
        self._model, self._provider = await self._model_now()
        metered = await self._call(self._request(ask, tools))
        summary = metered.completion.text.strip() if metered else ""
        # A summary refused as too long leaves the history as it was; it is the
        # breaker's to count, not a reason to drop the turn that follows.
        self.result.overflowed = False
        if not summary:
            if self._session.breaker.failed():
                await self._tell(notices.BREAKER)
            return history
        self._session.breaker.succeeded()
        self._summarised = True
        read_at = saved.relative_to(self.workspace)
        compacted = replacement(summary, recent_files(history), read_at)
        await services.transcript.replace(agent, compacted)
        await self._tell(notices.summarised(saved))
        return compacted

    async def _prompt_layers(self, *, fresh: bool) -> tuple[str, ...]:
        """Extra stable sections of the system prompt, fixed for a whole session.

        The repo map orients the *next* session; within one, the files are in
        the history already, and a layer that moved with every new read would
        break the cache of everything after it. So it is taken when a session
        starts (or restarts from a summary) and kept until then."""
        settings, session = self.services.config.repo_map, self._session
        if not settings.enabled:
            return ()
        if fresh or session.layers is None:
            repo_map = await asyncio.to_thread(layer, self.workspace, settings)
            session.layers = (repo_map,) if repo_map else ()
        return session.layers

    async def _model_now(self) -> tuple[str, str]:
        """The model (and its provider) the next call uses: the agent's own,
        or from `fallback.at` of its ceiling its cheaper fallback (said once per
        switch: back on its own model the same day, when its ceiling was
        raised, is said too; the next day's spend starts below it, so the
        agent is back, as the switch said)."""
        spec, services = self.spec, self.services
        fallback = spec.fallback
        if fallback is None:
            return spec.model, spec.provider
        spent = await services.ledger.spend_today(spec.name)
        ceiling = services.gate.ceilings.of(spec.name)
        day = await services.ledger.today()
        if ceiling is None or not steps_down(spent, ceiling, fallback.at):
            if await services.conversation.forget_today(
                spec.name, "fallback", day, services.gate.ceilings.changes
            ):
                # Its ceiling was raised or removed while it ran on its fallback.
                said = notices.back_on(spec.name, spec.model, spent, ceiling, fallback.at)
                await self._tell(said)
            return spec.model, spec.provider
        if not services.pricer.is_known(fallback.model):
            # Its calls would count nothing against the ceiling: this turn
            # goes on counted, and the gate holds the next (`AgentWorker.hold`).
            return spec.model, spec.provider
        if await services.conversation.first_today(spec.name, "fallback", day):
            said = notices.stepped_down(spec.name, fallback.model, spent, ceiling, fallback.at)
            await self._tell(said)
        return fallback.model, fallback.provider

    def _request(
        self, messages: list[ChatMessage], tools: tuple[ToolSpec, ...]
    ) -> CompletionRequest:
        services = self.services
        provider = services.config.providers[self._provider]
        return CompletionRequest(
            model=self._model,
            system=system_prompt(self.spec, day_of(services.clock.now()), self._layers),
            messages=tuple(messages),
            tools=tools,
            tool_mode=provider.effective_tool_mode,
            max_output_tokens=services.config.defaults.max_output_tokens,
            temperature=provider.temperature,
            frequency_penalty=provider.frequency_penalty,
            cache_breakpoints=cache_breakpoints(len(messages)),
        )

    def _count(self, cost: Decimal) -> None:
        """A call's cost, once written: counted here, not when `_call` resumes,
        so a turn cut while its cost was written still tells it."""
        self.result.cost += cost

    async def _call(self, request: CompletionRequest) -> Metered | None:
        self.result.calls += 1
        try:
            metered = await metered_call(
                self.services, self.spec.name, self._provider, request, self.number, self._count
            )
        except ContextOverflow:
            self.result.ok = False
            self.result.overflowed = True  # said once the turn knows its history
            return None
        except ProviderError as exc:
            self.result.ok = False
            await self._tell(notices.failed(str(exc)))
            return None
        except Full as full:
            # Refused at admission (nothing was sent or written): the turn
            # ends, and what it was answering waits for the next one.
            self.result.ok = False
            self.result.held, self.result.held_by = True, full.scope
            hold = self.services.gate.full_hold(self.spec.name, full)
            await self._tell(notices.why(hold, self.services.clock.now()))
            return None
        self.result.model = request.model
        self.result.usage = self.result.usage + metered.completion.usage
        self.result.unpriced |= not metered.priced
        await self._on_spend(self.spec.name)
        if metered.failure is not None:
            self.result.ok = False
            await self._tell(notices.broken(metered.failure))
            return None
        if metered.completion.stop_reason == "interrupted":
            await self._tell(notices.CUT_OFF)
        return metered

    def _first_time(self, calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
        """The calls not made before in this turn, or made before another call
        that may have changed what they read (a file read again after it was
        written is read again); a repeat is dropped from the model's input
        (its result is there already) and ends the tools."""
        fresh = []
        for call in calls:
            signature = call_signature(call.name, call.arguments)
            if signature in self._still_hold:
                self._repeated = True
                continue
            self._calls_made[signature] = seen(call.name, call.arguments, "")
            fresh.append(call)
            if not changes_nothing(call.name):
                self._still_hold.clear()  # what it may have changed is read anew
            self._still_hold.add(signature)  # the same call at once is a repeat
        return tuple(fresh)

    def _seen(self, calls: tuple[ToolCall, ...]) -> tuple[Seen, ...]:
        """The results of `calls` as the guard sees them: a repeat dropped
        from the model's input is the same call with the same result again."""
        return tuple(self._calls_made[call_signature(call.name, call.arguments)] for call in calls)

    async def _watched(
        self, metered: Metered, *, tools: tuple[Seen, ...] = (), answer: str | None = None
    ) -> bool:
        """Show the guard the call just made; True when it found a loop (the
        agent is held from now on: `on_loop`)."""
        step = Step(
            metered.charge.cost_usd,
            self.services.clock.now(),
            tools,
            answer,
            news=self._news,
        )
        self._news = False
        guard = self._guard
        if guard.settings.enabled and not guard.brings_news(step):
            # Nothing new in what it said or read: a file it changed is news.
            now = await asyncio.to_thread(workspace_digest, self.workspace)
            step = Step(step.cost, step.at, tools, answer, news=guard.workspace_changed(now))
        loop = guard.step(step)
        if loop is None:
            return False
        await self._on_loop(loop)
        return True

    async def _tool(self, call: ToolCall) -> ChatMessage:
        outcome = await self.tooling.run(self.spec, call, self.workspace, self.tools)
        bookkeeping = call.name in BOOKKEEPING
        self._calls_made[call_signature(call.name, call.arguments)] = seen(
            call.name, call.arguments, outcome.for_model, bookkeeping=bookkeeping
        )
        if not outcome.ok or call.name in PLANE_VOICE:
            self._plane_said.append(outcome.for_model)
        self.result.saved_chars += outcome.saved_chars
        first = outcome.shown.strip().splitlines()[0] if outcome.shown.strip() else ""
        mark = "" if outcome.ok else " (refused)"
        summary = f"{outcome.tool}{mark} → {first[:SUMMARY_CHARS]}"
        # The whole result, as the model read it (compressed), under the summary
        # line: the conversation shows the summary, and a reader can open it.
        whole = outcome.for_model.strip()
        await self.services.add_message(
            self.spec.name, "tool", f"{summary}\n{whole}" if whole and whole != first else summary
        )
        # Which tool (and MCP server) gave it, kept with the history for cost by tool.
        return ChatMessage(
            "tool",
            outcome.for_model,
            tool_call_id=call.id,
            tool=outcome.tool,
            mcp_server=outcome.mcp_server,
        )

    async def _tell(self, notice: str) -> ConversationMessage:
        """The plane tells the agent's conversation `notice` (`plane.agents.notices`)."""
        return await self.services.add_message(self.spec.name, "plane", notice)


CUT_AT_LIMIT = frozenset({"length", "max_tokens"})
"""Stop reasons that mean the answer hit max_output_tokens (OpenAI's and
llama.cpp's `length`, Anthropic's `max_tokens`)."""


def cut_mark(stop_reason: str, max_output_tokens: int) -> str:
    """What people read after an answer the output limit cut: ` (cut at 256
    tokens)`; nothing for an answer that ended on its own. The model's
    history keeps the answer as it came."""
    if stop_reason not in CUT_AT_LIMIT:
        return ""
    return notices.cut_mark(max_output_tokens)


BREAKPOINT_SPACING = 16
"""Anthropic looks for a cached prefix up to 20 blocks back from a breakpoint."""


def cache_breakpoints(count: int) -> tuple[int, ...]:
    """Where a provider with explicit caching marks the prompt: its end, so
    the next call reads what this one wrote, and every `BREAKPOINT_SPACING`
    messages before it (at most three), so a long stretch of tool results
    added in one turn still finds the prefix the last call cached."""
    return tuple(sorted(range(count - 1, -1, -BREAKPOINT_SPACING)[:3]))
