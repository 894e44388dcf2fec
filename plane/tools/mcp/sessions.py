"""Each agent's MCP servers and their tools, fixed for a session.

A session's tools are part of the cached prompt prefix, so, like the
capability diet, they are decided once: when a session begins (its founding
message, or its workspace, is new) the agent's servers are started, their
tool lists read, and the tools its allowlist permits frozen into a `Catalog`
that every turn of the session offers, byte for byte. The servers run until
the session ends (a new session, the agent deleted, the plane stopped); one
that ends before is started again at the next call of its tools, with the
session's tool list unchanged.

A tool a model cannot be offered safely is left out, and the plane's log
says why: a name no provider takes, an input schema that is not an object
or is larger than `MAX_SCHEMA_CHARS`. Descriptions are cut at
`MAX_DESCRIPTION_CHARS`.

The MCP SDK (`link`, `results`) is loaded when an agent's first session with
servers opens, not with the plane: its models cost every start ~0.7 s of CPU,
a third of a start of 10,000 agents, on a plane most of whose agents have no
server.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from plane.tools.base import ToolResult, ToolSpec
from plane.tools.mcp import names

if TYPE_CHECKING:
    import mcp_types

    from plane.tools.mcp.link import Link, Settings

log = logging.getLogger(__name__)

MAX_DESCRIPTION_CHARS = 1024
MAX_SCHEMA_CHARS = 16_000


@dataclass(frozen=True)
class McpTool:
    server: str
    tool: str
    """Its name on its server."""
    spec: ToolSpec
    """As the model is offered it (named `server__tool`)."""

    @property
    def shown(self) -> str:
        return names.shown(self.server, self.tool)


@dataclass(frozen=True)
class Catalog:
    """A session's MCP tools, in a fixed order (servers as configured, each
    one's tools by name), by the name the model calls them."""

    tools: Mapping[str, McpTool] = field(default_factory=dict)

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(tool.spec for tool in self.tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self.tools


EMPTY = Catalog()


@dataclass(frozen=True)
class Opened:
    catalog: Catalog
    notices: tuple[str, ...] = ()
    """One sentence per server that did not start, for the conversation."""


@dataclass
class _Session:
    key: str
    catalog: Catalog
    links: dict[str, Link]

    async def close(self) -> None:
        await asyncio.gather(*(link.stop() for link in self.links.values()))


class McpSessions:
    """Every agent's MCP session; built once, closed when the plane stops."""

    def __init__(self, *, sandboxed: bool) -> None:
        self._sandboxed = sandboxed
        self._sessions: dict[str, _Session] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def session(
        self,
        agent: str,
        workspace: Path,
        founding: str,
        servers: Mapping[str, Settings],
        allowlist: Iterable[str] | None,
    ) -> Opened:
        """`agent`'s tools for the session `founding` begins in `workspace`:
        the same catalog every turn of it; a new one, with its servers started
        anew, when the session is new."""
        allowed = None if allowlist is None else tuple(allowlist)
        wanted = {name: c for name, c in servers.items() if names.may_allow(allowed, name)}
        key = _key(workspace, founding, wanted, allowed)
        async with self._locks.setdefault(agent, asyncio.Lock()):
            current = self._sessions.get(agent)
            if current is not None and current.key == key:
                return Opened(current.catalog)
            if current is not None:
                del self._sessions[agent]
                await current.close()
            session, notices = await self._open(key, workspace, wanted, allowed)
            self._sessions[agent] = session
            return Opened(session.catalog, notices)

    def catalog_of(self, agent: str) -> Catalog:
        """The tools `agent`'s open session offers its model; EMPTY before
        its first session (its servers start with it)."""
        session = self._sessions.get(agent)
        return EMPTY if session is None else session.catalog

    async def call(self, agent: str, name: str, arguments: str) -> ToolResult:
        """Call the tool the model knows as `name` in `agent`'s session."""
        session = self._sessions.get(agent)
        tool = session.catalog.tools.get(name) if session is not None else None
        if session is None or tool is None:
            return ToolResult(f"There is no tool named {name[:80]!r} here.", ok=False)
        try:
            parsed = json.loads(arguments or "{}")
        except ValueError as error:
            return ToolResult(f"The arguments are not valid JSON ({error}).", ok=False)
        if not isinstance(parsed, dict):
            return ToolResult("The arguments must be a JSON object.", ok=False)
        from plane.tools.mcp.link import Failed  # loaded: the session opened its links
        from plane.tools.mcp.results import as_text

        try:
            result = await session.links[tool.server].call(tool.tool, parsed)
        except Failed as failure:
            return ToolResult(f"{tool.shown} failed: its MCP server {failure}.", ok=False)
        text = as_text(result)
        return ToolResult(text or "(no output)", ok=not result.is_error)

    async def end(self, agent: str) -> None:
        """End `agent`'s session: its servers stop (deleted, or renamed)."""
        async with self._locks.setdefault(agent, asyncio.Lock()):
            session = self._sessions.pop(agent, None)
            if session is not None:
                await session.close()

    async def close(self) -> None:
        sessions, self._sessions = list(self._sessions.values()), {}
        await asyncio.gather(*(session.close() for session in sessions))

    async def _open(
        self,
        key: str,
        workspace: Path,
        servers: Mapping[str, Settings],
        allowed: tuple[str, ...] | None,
    ) -> tuple[_Session, tuple[str, ...]]:
        from plane.tools.mcp.link import Link  # the SDK: see the module's docstring

        links = {
            name: Link(name, config, workspace, sandboxed=self._sandboxed)
            for name, config in servers.items()
        }
        try:
            listed = await asyncio.gather(
                *(link.start() for link in links.values()), return_exceptions=True
            )
        except BaseException:  # the turn was cut off while they started
            await asyncio.gather(*(link.stop() for link in links.values()))
            raise
        tools: dict[str, McpTool] = {}
        notices = []
        for (name, link), result in zip(links.items(), listed, strict=True):
            if isinstance(result, BaseException):
                notices.append(_not_started(name, result))
                await link.stop()
                continue
            for tool in sorted(offerable(name, result, allowed), key=lambda t: t.spec.name):
                tools[tool.spec.name] = tool
        return _Session(key, Catalog(tools), links), tuple(notices)


def offerable(
    server: str, listed: list[mcp_types.Tool], allowed: tuple[str, ...] | None
) -> list[McpTool]:
    """The server's tools the agent may use and a model can be offered."""
    offered: dict[str, McpTool] = {}
    for tool in listed:
        if not names.allows(allowed, server, tool.name):
            continue
        wire = names.wire_name(server, tool.name)
        schema = json.dumps(tool.input_schema, ensure_ascii=False, sort_keys=True)
        why = (
            "its name is too long for a model's tool name"
            if wire is None
            else "another of its tools has the same name once made safe for a model"
            if wire in offered
            else "its input schema is not an object"
            if tool.input_schema.get("type") != "object"
            else f"its input schema is over {MAX_SCHEMA_CHARS:,} characters"
            if len(schema) > MAX_SCHEMA_CHARS
            else None
        )
        if why is not None or wire is None:
            log.warning("MCP tool %s.%s is not offered: %s", server, tool.name[:80], why)
            continue
        description = (tool.description or tool.title or tool.name).strip()
        if len(description) > MAX_DESCRIPTION_CHARS:
            description = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
        spec = ToolSpec(wire, description, json.loads(schema))
        offered[wire] = McpTool(server, tool.name, spec)
    return list(offered.values())


def _not_started(server: str, error: BaseException) -> str:
    from plane.tools.mcp.link import Failed

    why = str(error) if isinstance(error, Failed) else f"failed ({type(error).__name__})"
    if not isinstance(error, Failed):
        log.error("MCP server %s failed to start", server, exc_info=error)
    return (
        f"The MCP server {server} could not be used: it {why}. Its tools are not "
        "offered in this session; /new starts one that tries again."
    )


def _key(
    workspace: Path,
    founding: str,
    servers: Mapping[str, Settings],
    allowed: tuple[str, ...] | None,
) -> str:
    """What makes a session the same one: its founding message and workspace,
    and the servers and allowlist it was opened with."""
    parts = [
        str(workspace),
        founding,
        json.dumps({n: _settings(c) for n, c in servers.items()}, sort_keys=True),
        json.dumps(allowed),
    ]
    return hashlib.sha256("\0".join(parts).encode("utf-8", errors="replace")).hexdigest()


def _settings(server: Settings) -> list[object]:
    return [
        server.command,
        list(server.args),
        dict(server.env),
        [str(path) for path in server.read],
        server.start_timeout_s,
        server.timeout_s,
    ]
