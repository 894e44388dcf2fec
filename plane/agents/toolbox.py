"""How a turn uses tools: which ones a session gets, and running one call.

The set of tools is decided once per session, from its founding message
(the capability diet), so the tool schemas — part of the cached prompt
prefix — stay the same turn after turn; a call to a tool outside that set is
refused like an unknown one. A tool's output is machine-made, so it goes
through compression on its way to the model; people see a summary.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from plane.agents.roster import AgentSpec
from plane.agents.services import Services
from plane.agents.tool_context import AgentToolContext, Book, Scout
from plane.economy.compress import compress
from plane.economy.repomap.map import note_read
from plane.providers.base import ChatMessage, ToolCall, ToolSpec
from plane.tools import registry

UNCOMPRESSED = frozenset({"retrieve"})
"""Retrieval returns what compression removed: compressing it again would
only hide it a second time."""


@dataclass(frozen=True)
class ToolOutcome:
    for_model: str
    """What the model reads (compressed when that is smaller)."""
    shown: str
    """What people see a line of (the tool's own output)."""
    ok: bool
    saved_chars: int = 0


class Tooling:
    def __init__(self, services: Services, book: Book, scout: Scout | None = None) -> None:
        self._services = services
        self._book = book
        self._scout = scout
        self._specs: dict[tuple[str, ...], tuple[ToolSpec, ...]] = {}

    def session(self, spec: AgentSpec, messages: list[ChatMessage]) -> tuple[str, ...]:
        """The session's tools: decided by its founding message, the first
        user message of the history."""
        founding = next((m.content for m in messages if m.role == "user"), "")
        return registry.select_for_session(spec.tools, founding)

    def specs(self, names: tuple[str, ...]) -> tuple[ToolSpec, ...]:
        """The same specs for every turn offered the same tools: a turn and the
        providers only read them (a copy each turn cost 7% of a call's CPU)."""
        if (made := self._specs.get(names)) is None:
            made = self._specs[names] = registry.specs(names)
        return made

    async def run(
        self, spec: AgentSpec, call: ToolCall, workspace: Path, available: tuple[str, ...]
    ) -> ToolOutcome:
        context = AgentToolContext(self._services, spec.name, workspace, self._book, self._scout)
        result = await registry.call(call.name, call.arguments, context, available=available)
        if call.name == "read_file" and result.ok:
            await self._remember(workspace, call, result.text)
        refs = self._services.refs
        if refs is None or call.name in UNCOMPRESSED:
            return ToolOutcome(result.text, result.text, result.ok)
        # ~0.3 ms a KB: a large output would stall every other agent on the loop.
        compressed = await asyncio.to_thread(compress, result.text, command=_command_of(call))
        if compressed.refs:
            await asyncio.to_thread(refs.put, compressed.refs)
        return ToolOutcome(compressed.text, result.text, result.ok, compressed.saved)

    async def _remember(self, workspace: Path, call: ToolCall, text: str) -> None:
        """Put a file the agent read on its repo map (when the map is on)."""
        settings = self._services.config.repo_map
        path = _argument(call, "path")
        if settings.enabled and path:
            await asyncio.to_thread(note_read, workspace, path, text, settings)


def _argument(call: ToolCall, name: str) -> str | None:
    try:
        value = json.loads(call.arguments).get(name)
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _command_of(call: ToolCall) -> str | None:
    """What printed the output, as a shell command: the compressor's best hint (read_file
    prints a file as `cat` would, and the file's name says what it holds)."""
    if call.name == "read_file":
        path = _argument(call, "path")
        return f"cat {shlex.quote(path)}" if path else None
    return _argument(call, "command") if call.name == "run_command" else None
