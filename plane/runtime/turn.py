"""One turn: prompt → model → tool calls → results → model … → an answer.

A turn is bounded by `defaults.max_calls_per_turn` LLM calls, which is what
bounds a ceiling's overshoot to one turn. Every call goes through
`metered_call` (ledger before anything is shown). Tool results reach the
model through the toolbox and compression; people see a one-line summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from plane.clock import day_of
from plane.errors import ProviderError
from plane.protocol import Message, MessageKind, Usage
from plane.providers.base import ChatMessage, CompletionRequest, ToolCall
from plane.roster import AgentSpec
from plane.runtime.calls import Metered, metered_call
from plane.runtime.prompt import system_prompt
from plane.runtime.services import Services
from plane.runtime.tooling import Tooling

SUMMARY_CHARS = 160


@dataclass
class TurnResult:
    answer: str = ""
    cost: Decimal = Decimal(0)
    usage: Usage = field(default_factory=Usage)
    ok: bool = True
    unpriced: bool = False


class Turn:
    def __init__(
        self, services: Services, spec: AgentSpec, number: int, tooling: Tooling,
        workspace: Path | None = None,
    ) -> None:
        self.services = services
        self.spec = spec
        self.number = number
        self.tooling = tooling
        self.workspace = workspace or spec.workspace
        self.result = TurnResult()
        self.tools: tuple[str, ...] = ()

    async def run(self, incoming: str) -> TurnResult:
        services, spec = self.services, self.spec
        history = await services.transcript.load(spec.name)
        new = [ChatMessage("user", incoming)]
        self.tools = self.tooling.session(spec, history + new)
        tools = self.tooling.specs(self.tools)
        provider = services.config.providers[spec.provider]
        for _ in range(services.config.defaults.max_calls_per_turn):
            request = CompletionRequest(
                model=spec.model,
                system=system_prompt(spec, day_of(services.clock.now())),
                messages=tuple(history + new),
                tools=tools,
                tool_mode=provider.effective_tool_mode,
                max_output_tokens=services.config.defaults.max_output_tokens,
            )
            metered = await self._call(request)
            if metered is None:
                break
            completion = metered.completion
            if not completion.tool_calls:
                new.append(ChatMessage("assistant", completion.text))
                self.result.answer = completion.text
                break
            new.append(ChatMessage("assistant", completion.text, completion.tool_calls))
            for call in completion.tool_calls:
                new.append(await self._tool(call))
        else:
            await self.say("plane", _cap_notice(services.config.defaults.max_calls_per_turn))
        await services.transcript.extend(spec.name, new)
        return self.result

    async def _call(self, request: CompletionRequest) -> Metered | None:
        try:
            metered = await metered_call(
                self.services, self.spec.name, self.spec.provider, request, self.number
            )
        except ProviderError as exc:
            self.result.ok = False
            await self.say("plane", f"The turn stopped: {exc}")
            return None
        self.result.cost += metered.charge.cost_usd
        self.result.usage = self.result.usage + metered.completion.usage
        self.result.unpriced |= not metered.priced
        await self.services.crew.after_spend(self.spec.name)
        return metered

    async def _tool(self, call: ToolCall) -> ChatMessage:
        outcome = await self.tooling.run(self.spec, call, self.workspace, self.tools)
        first = outcome.shown.strip().splitlines()[0] if outcome.shown.strip() else ""
        mark = "" if outcome.ok else " (refused)"
        await self.say("tool", f"{call.name}{mark} → {first[:SUMMARY_CHARS]}")
        return ChatMessage("tool", outcome.for_model, tool_call_id=call.id)

    async def say(self, kind: MessageKind, text: str) -> Message:
        return await self.services.say(self.spec.name, kind, text)


def _cap_notice(cap: int) -> str:
    return f"The turn ended after {cap} LLM calls, the per-turn cap; ask again to continue."

