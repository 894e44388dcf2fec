"""How a turn uses tools: which ones a session gets, and running one call.

The set of tools is decided once per session, from its founding message
(the capability diet), so the tool schemas — part of the cached prompt
prefix — stay the same turn after turn; a call to a tool outside that set is
refused like an unknown one. The agent's MCP servers' tools join the set
the same way, listed once when the session begins (plane/tools/mcp/). A
tool's output is machine-made, so it goes through compression on its way to
the model; people see a summary.
"""

from __future__ import annotations

import asyncio
import functools
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from plane.agents.commands import PricedOf, RefusedAsk, all_priced
from plane.agents.roster import AgentSpec
from plane.agents.services import Services
from plane.agents.tool_context import AgentToolContext, Book, Scout
from plane.economy.compress import compress
from plane.economy.repomap.map import note_read
from plane.providers.base import ChatMessage, ToolCall, ToolSpec
from plane.tools import registry
from plane.tools.base import ToolResult
from plane.tools.mcp.sessions import EMPTY, Catalog, McpSessions

UNCOMPRESSED = frozenset({"retrieve"})
"""Retrieval returns what compression removed: compressing it again would
only hide it a second time."""


@dataclass(frozen=True)
class Selection:
    """A session's tools: the registry's the diet chose, and its MCP servers'."""

    names: tuple[str, ...] = ()
    """The registry's tools offered."""
    mcp: Catalog = field(default=EMPTY)


@dataclass(frozen=True)
class ToolOutcome:
    for_model: str
    """What the model reads (compressed when that is smaller)."""
    shown: str
    """What people see a line of (the tool's own output)."""
    ok: bool
    saved_chars: int = 0
    tool: str = ""
    """The tool as people name it (`run_command`, `time.get_current_time`)."""
    mcp_server: str | None = None
    """The MCP server that answered, for an MCP tool."""


class Tooling:
    def __init__(
        self,
        services: Services,
        book: Book,
        scout: Scout | None = None,
        refused_ask: RefusedAsk | None = None,
        priced: PricedOf | None = None,
    ) -> None:
        """`book` is the scheduler's, `scout` the scout's; `refused_ask` is
        told when an agent asks for a looser ceiling (the alerts'); `priced`
        says how an agent's row prices its spend (the rows'; None: all of
        it priced)."""
        self._services = services
        self._book = book
        self._scout = scout
        self._refused_ask = refused_ask
        self._priced = priced
        self._specs: dict[tuple[str, ...], tuple[ToolSpec, ...]] = {}
        self.mcp = McpSessions(sandboxed=services.config.sandbox)
        """The agents' MCP servers: the crew ends an agent's, and all at its stop."""

    async def session(
        self, spec: AgentSpec, messages: list[ChatMessage], workspace: Path
    ) -> Selection:
        """The session's tools: decided by its founding message, the first
        user message of the history. Its MCP servers start with the session,
        and the conversation hears of any that did not."""
        founding = next((m.content for m in messages if m.role == "user"), "")
        names = registry.select_for_session(spec.tools, founding)
        servers = self._services.config.mcp_servers_of(spec.name)
        if not servers or spec.gateway is not None:
            return Selection(names)
        opened = await self.mcp.session(spec.name, workspace, founding, servers, spec.tools)
        for notice in opened.notices:
            await self._services.add_message(spec.name, "plane", notice)
        return Selection(names, opened.catalog)

    def specs(self, selection: Selection) -> tuple[ToolSpec, ...]:
        """The same specs for every turn offered the same tools: a turn and the
        providers only read them (a copy each turn cost 7% of a call's CPU)."""
        names = selection.names
        if (made := self._specs.get(names)) is None:
            made = self._specs[names] = registry.specs(names)
        return made + selection.mcp.specs if selection.mcp.tools else made

    async def run(
        self, spec: AgentSpec, call: ToolCall, workspace: Path, available: Selection
    ) -> ToolOutcome:
        result, tool, server = await self._call(spec, call, workspace, available)
        if call.name == "read_file" and result.ok:
            await self._remember(workspace, call, result.text)
        refs = self._services.refs
        compressing = self._services.config.compression.enabled
        if refs is None or not compressing or call.name in UNCOMPRESSED:
            return ToolOutcome(result.text, result.text, result.ok, 0, tool, server)
        # ~0.3 ms a KB: a large output would stall every other agent on the loop.
        compressed = await asyncio.to_thread(compress, result.text, command=_command_of(call))
        if compressed.refs:
            await asyncio.to_thread(refs.put, compressed.refs)
        return ToolOutcome(compressed.text, result.text, result.ok, compressed.saved, tool, server)

    async def _call(
        self, spec: AgentSpec, call: ToolCall, workspace: Path, available: Selection
    ) -> tuple[ToolResult, str, str | None]:
        """The result, and the tool and MCP server (if any) that gave it."""
        mcp = available.mcp.tools.get(call.name)
        if mcp is not None:
            result = await self.mcp.call(spec.name, call.name, call.arguments)
            return result, mcp.shown, mcp.server
        priced = all_priced if self._priced is None else functools.partial(self._priced, spec.name)
        context = AgentToolContext(
            self._services,
            spec.name,
            workspace,
            self._book,
            self._scout,
            self._refused_ask,
            priced,
        )
        result = await registry.call(call.name, call.arguments, context, available=available.names)
        return result, call.name, None

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
