"""An MCP server's process, spoken to over stdio: confined, bounded, and
ended with everything it started.

The SDK's own stdio transport starts the command as it is, with the plane's
HOME and PATH, and reads a line of any length into memory. This one starts it
through the launcher `run_command` uses (`sandbox.py`, `tree.py`): the agent's
workspace as its only writable place, Landlock, a PID namespace whose end
takes the server's whole tree with it, and the scrubbed environment of
`tool_environment` plus the server's own `env:`; and it reads at most
`MESSAGE_CAP` bytes a message, so a server that answers gigabytes is cut off,
not held in memory. What the server writes on stderr is kept, head and tail,
to say why it failed.

Stopping follows the MCP spec (stdin closed, a grace, then signals), with
every wait bounded: SIGTERM asks the launcher to end the namespace, and the
whole process group is killed after that whatever it did.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from plane.tools import sandbox
from plane.tools.capture import HeadTail
from plane.tools.process import protected_homes

MESSAGE_CAP = 4 * 1024 * 1024
"""The most one message from a server may take; past it the server is stopped."""
STDERR_CAP = 8 * 1024
GRACE_S = 1.0
"""After stdin closes, how long the server has to exit on its own."""
STOP_WAIT_S = 2.0
"""After SIGTERM, how long the launcher has to end the namespace."""
KILL_WAIT_S = 5.0


@dataclass
class Process:
    """What is known of a running server, for the sentences that say why it stopped."""

    stderr: HeadTail = field(default_factory=lambda: HeadTail(STDERR_CAP))
    oversized: bool = False
    """It sent a message over `MESSAGE_CAP`."""
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    """Its output ended (it exited, crashed, or was cut off)."""
    returncode: int | None = None

    def last_words(self) -> str:
        """The last line it wrote on stderr, shortened: often the whole story."""
        lines = [line.strip() for line in self.stderr.text().splitlines() if line.strip()]
        return lines[-1][:200] if lines else ""


@contextlib.asynccontextmanager
async def confined_stdio(
    command: Sequence[str],
    *,
    workspace: Path,
    sandboxed: bool,
    env: Mapping[str, str],
    readable: Sequence[Path],
    process: Process,
) -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
    ]
]:
    """A transport for `mcp.Client`: the server runs while the context is open."""
    homes = protected_homes(workspace)
    if sandboxed:
        sandbox.log_dropped(env.get("PATH", ""), homes, readable)
    argv = sandbox.launcher(
        workspace, list(command), confined=sandboxed, protected=homes, readable=readable
    )
    child = await asyncio.create_subprocess_exec(
        *argv,
        cwd=workspace,
        env=dict(env),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        limit=MESSAGE_CAP,
    )
    incoming, reading = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, writing = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_read, child, incoming, process)
            tasks.start_soon(_write, child, writing, incoming)
            tasks.start_soon(_keep_stderr, child, process)
            try:
                yield reading, outgoing
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(child)
                tasks.cancel_scope.cancel()
    finally:
        for stream in (incoming, reading, outgoing, writing):
            stream.close()
        if child.returncode is None:  # the task group failed before it could stop it
            with anyio.CancelScope(shield=True):
                await _stop(child)
        process.returncode = child.returncode
        process.ended.set()


async def _read(
    child: asyncio.subprocess.Process,
    incoming: MemoryObjectSendStream[SessionMessage | Exception],
    process: Process,
) -> None:
    """Each line the server writes, as a JSON-RPC message. A line that is not
    one is skipped (servers print banners); one over the cap ends the server."""
    assert child.stdout is not None
    try:
        async with incoming:
            while line := await child.stdout.readline():
                try:
                    message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValueError:
                    continue
                await incoming.send(SessionMessage(message))
    except ValueError:  # the line reached MESSAGE_CAP without its end
        process.oversized = True
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
        pass
    finally:
        process.ended.set()


async def _write(
    child: asyncio.subprocess.Process,
    writing: MemoryObjectReceiveStream[SessionMessage],
    incoming: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    assert child.stdin is not None
    try:
        async with writing:
            async for message in writing:
                line = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                child.stdin.write(line.encode() + b"\n")
                await child.stdin.drain()
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        # The server no longer reads: end the session's view of it, so no
        # request waits for an answer that cannot come.
        incoming.close()


async def _keep_stderr(child: asyncio.subprocess.Process, process: Process) -> None:
    assert child.stderr is not None
    with contextlib.suppress(OSError):
        while chunk := await child.stderr.read(4096):
            process.stderr.write(chunk)


async def _stop(child: asyncio.subprocess.Process) -> None:
    """End the server and its tree: stdin closed, a grace, SIGTERM to the
    launcher, then SIGKILL to its whole group. Every wait is bounded."""
    if child.stdin is not None and not child.stdin.is_closing():
        child.stdin.close()
    if await _exited(child, GRACE_S):
        _kill_group(child.pid)  # the group may outlive its leader
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(child.pid, signal.SIGTERM)
    await _exited(child, STOP_WAIT_S)
    _kill_group(child.pid)
    await _exited(child, KILL_WAIT_S)


async def _exited(child: asyncio.subprocess.Process, within: float) -> bool:
    """Whether the launcher exited within `within` seconds. Its return code,
    not `wait()`: on Python 3.11 `wait()` also waits for the pipes to close."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while child.returncode is None:
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
