"""How a turn uses tools: which ones a session gets, and running one call.

The set of tools is decided once per session, from its founding message
(the capability diet), so the tool schemas — part of the cached prompt
prefix — stay the same turn after turn. A tool's output is machine-made, so
it goes through compression on its way to the model; people see a summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from plane.providers.base import ChatMessage, ToolCall, ToolSpec
from plane.roster import AgentSpec
from plane.runtime.services import Services
from plane.runtime.tool_context import AgentToolContext, Scout
from plane.tools import registry


@dataclass(frozen=True)
class ToolOutcome:
    for_model: str
    """What the model reads (compressed when that is smaller)."""
    shown: str
    """What people see a line of (the tool's own output)."""
    ok: bool
    saved_chars: int = 0


class Tooling:
    def __init__(self, services: Services, scout: Scout | None = None) -> None:
        self._services = services
        self._scout = scout

    def specs_for(self, spec: AgentSpec, messages: list[ChatMessage]) -> tuple[ToolSpec, ...]:
        founding = next((m.content for m in messages if m.role == "user"), "")
        return registry.specs(registry.select_for_session(spec.tools, founding))

    async def run(self, spec: AgentSpec, call: ToolCall, workspace: Path) -> ToolOutcome:
        if spec.tools is not None and call.name not in spec.tools:
            text = f"The tool {call.name!r} is not available to {spec.name}."
            return ToolOutcome(text, text, ok=False)
        context = AgentToolContext(self._services, spec.name, workspace, self._scout)
        result = await registry.call(call.name, call.arguments, context)
        return ToolOutcome(result.text, result.text, result.ok)
