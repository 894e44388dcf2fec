"""One MCP server for one agent's session: started, listed, called, stopped.

The SDK's client must be entered and left by one task (anyio's rule), so
each server has a task of its own that holds it open until told to stop or
until the server ends; tool calls are made on it from the turn's task.

Nothing here waits without a bound: starting and listing have the server's
`start_timeout_s`, a call its `timeout_s`. A server that does not answer in
time is stopped, as is one that crashed or sent too much; the next call of
one of its tools starts it again. Every failure is one sentence (`Failed`),
said where the turn can show it.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import mcp_types
from mcp import Client
from mcp.shared.exceptions import MCPError

from plane.tasks import settled
from plane.tools.mcp.transport import MESSAGE_CAP, Process, confined_stdio
from plane.tools.process import tool_environment
from plane.tools.sandbox import REFUSED
from plane.tools.tree import NOT_FOUND

log = logging.getLogger(__name__)

MAX_TOOLS = 64
"""A server's tools offered at most: each one's schema is in every prompt."""
MAX_PAGES = 10
CLIENT = mcp_types.Implementation(name="plane", version="1")


class Settings(Protocol):
    """A server's block of agents.yaml (`plane.config.McpServerConfig`, which
    the tools do not import: the config imports the tool registry)."""

    @property
    def command(self) -> str: ...
    @property
    def args(self) -> Sequence[str]: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def read(self) -> Sequence[Path]: ...
    @property
    def start_timeout_s(self) -> float: ...
    @property
    def timeout_s(self) -> float: ...


class Failed(Exception):
    """A server that could not do what was asked: what it did, said of it
    without a subject ("exited with 1 (…)"), so a sentence can name it."""


class Link:
    def __init__(self, name: str, config: Settings, workspace: Path, *, sandboxed: bool) -> None:
        self.name = name
        self.config = config
        self.workspace = workspace
        self.sandboxed = sandboxed
        self._client: Client | None = None
        self._process = Process()
        self._runner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()

    async def start(self) -> list[mcp_types.Tool]:
        """Start the server and read its tools (at most `MAX_TOOLS`)."""
        async with self._lock:
            await self._open()
            try:
                return await asyncio.wait_for(self._list(), self.config.start_timeout_s)
            except TimeoutError:
                why = self._no_answer("list its tools")
                await self.stop()
                raise Failed(why) from None
            except (MCPError, ValueError) as error:
                await self.stop()
                raise Failed(f"refused to list its tools ({_said(error)})") from None

    async def call(self, tool: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call `tool`, starting the server again first if it ended."""
        async with self._lock:
            if self._client is None or self._process.ended.is_set():
                await self.stop()
                await self._open()
        client = self._client
        assert client is not None
        try:
            return await asyncio.wait_for(client.call_tool(tool, arguments), self.config.timeout_s)
        except TimeoutError:
            await self.stop()
            raise Failed(
                f"gave no answer within {self.config.timeout_s:g}s, so it was stopped; "
                "it starts again at the next call of its tools"
            ) from None
        except MCPError as error:
            if not self._process.ended.is_set():
                raise Failed(f"refused the call ({_said(error)})") from None
            await self.stop()
            raise Failed(
                f"{self._ended()}; it starts again at the next call of its tools"
            ) from None

    async def stop(self) -> None:
        """End the server and everything it started (bounded: see `transport`)."""
        runner, client = self._runner, self._client
        self._runner, self._client = None, None
        if runner is None:
            return
        if client is None:
            runner.cancel()  # still starting: nothing to close gracefully
        self._stop.set()
        await settled(runner)  # however it ends; the caller's own stop still raises here

    async def _open(self) -> None:
        self._process, self._stop = Process(), asyncio.Event()
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._runner = asyncio.create_task(self._run(ready), name=f"mcp:{self.name}")
        try:
            self._client = await asyncio.wait_for(
                asyncio.shield(ready), self.config.start_timeout_s
            )
        except TimeoutError:
            why = self._no_answer("start")
            ready.cancel()
            await self.stop()
            raise Failed(why) from None
        except Exception as error:
            await self.stop()
            raise Failed(self._why_not_started(error)) from None

    async def _run(self, ready: asyncio.Future[Client]) -> None:
        """Hold the client open (this task enters and leaves it) until told to
        stop or until the server ends."""
        try:
            async with Client(self._transport(), client_info=CLIENT, cache=None) as client:
                ready.set_result(client)
                ended = asyncio.create_task(self._process.ended.wait())
                stopped = asyncio.create_task(self._stop.wait())
                try:
                    await asyncio.wait({ended, stopped}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    ended.cancel()
                    stopped.cancel()
        except BaseException as error:
            if not ready.done():
                ready.set_exception(error if isinstance(error, Exception) else Failed("stopped"))
            if not isinstance(error, Exception):
                raise
            log.info("MCP server %s ended: %s", self.name, _said(error))

    def _transport(self) -> Any:
        env = tool_environment(self.workspace)
        env.update(self.config.env)
        return confined_stdio(
            [self.config.command, *self.config.args],
            workspace=self.workspace,
            sandboxed=self.sandboxed,
            env=env,
            readable=[*self.config.read, *_install_of(self.config.command, env)],
            process=self._process,
        )

    async def _list(self) -> list[mcp_types.Tool]:
        client = self._client
        assert client is not None
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if cursor is None or len(tools) >= MAX_TOOLS:
                break
        if len(tools) > MAX_TOOLS:
            log.warning(
                "MCP server %s lists %d tools; the first %d are offered",
                self.name,
                len(tools),
                MAX_TOOLS,
            )
        return tools[:MAX_TOOLS]

    def _no_answer(self, what: str) -> str:
        if self._process.ended.is_set():
            return self._ended()
        return f"did not {what} within {self.config.start_timeout_s:g}s"

    def _why_not_started(self, error: BaseException) -> str:
        if self._process.ended.is_set() or self._process.returncode is not None:
            return self._ended()
        return f"could not be started ({_said(error)})"

    def _ended(self) -> str:
        """Why the server's output ended, as far as the plane can tell."""
        process = self._process
        if process.oversized:
            return f"sent a message over {MESSAGE_CAP // (1024 * 1024)} MB, so it was stopped"
        code = process.returncode
        words = process.last_words()
        if code == NOT_FOUND and words:
            return f"could not be run ({words})"
        if code == REFUSED and words:
            return f"was refused by the sandbox ({words})"
        said = f"exited with {code}" if code is not None and code >= 0 else "stopped"
        if code is not None and code < 0:
            said = f"was killed by signal {-code}"
        return f"{said} ({words})" if words else said


def _install_of(command: str, env: dict[str, str]) -> list[Path]:
    """Where the command itself lives, so the sandbox lets it be read: its
    directory, and the virtual environment it belongs to, if any."""
    found = shutil.which(command, path=env.get("PATH"))
    if found is None:
        return []
    where = Path(found).parent
    return [where.parent] if (where.parent / "pyvenv.cfg").exists() else [where]


def _said(error: BaseException) -> str:
    if isinstance(error, MCPError):
        return error.message[:200]
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:200]
