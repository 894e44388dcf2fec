"""Running a child process for a tool: bounded in time, output and reach.

Every child runs through the launcher (`sandbox.py`, `tree.py`): in a process
tree of its own that ends with it — a PID namespace whose init takes every
descendant with it, `setsid -f` daemons included — and, unless the operator
set `sandbox: false`, under Landlock with no capabilities. It starts in its own
session, with stdin closed, stdout and stderr merged in the order they were
written, and a scrubbed environment: the daemon's environment holds the
providers' API keys, and a tool's output goes straight to a model.

When the command returns, nothing it started is left. When it times out or
its turn is cancelled, the launcher is asked to stop (SIGTERM: it ends the
tree and exits), and its whole group is killed after `STOP_WAIT_S` whatever
it did; a launcher killed outright still takes the namespace with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from plane.home import Home
from plane.tools import sandbox
from plane.tools.capture import HeadTail

DRAIN_S = 0.5
"""After the group is killed, how long its output may take to arrive."""
STOP_WAIT_S = 2.0
"""After SIGTERM on a timeout or cancellation, how long the launcher has to end its tree."""
KILL_WAIT_S = 5.0
"""After SIGKILL, how long the leader may take to be reported gone."""

KEPT_VARIABLES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "LOGNAME")
QUIET = {
    # Tokens are money: no colours, no pagers, no prompts that wait forever.
    "TERM": "dumb",
    "NO_COLOR": "1",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "PYTHONUNBUFFERED": "1",
}


def tool_environment(workspace: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a tool's process sees: a few harmless variables from the
    plane's, HOME and PWD set to the workspace, and settings that keep output
    plain. Nothing else (API keys, tokens) crosses."""
    source = os.environ if base is None else base
    env = {name: source[name] for name in KEPT_VARIABLES if name in source}
    env.setdefault("PATH", os.defpath)
    env.update(QUIET, HOME=str(workspace), PWD=str(workspace))
    return env


@dataclass(frozen=True)
class Finished:
    output: str
    """stdout and stderr merged, decoded, capped (head and tail, a marker between)."""
    exit_code: int | None
    """The exit status; negative for a signal (as asyncio reports it); None if timed out."""
    seconds: float
    timed_out: bool


def protected_homes(workspace: Path) -> list[Path]:
    """What an agent's command must never read: the plane's home (its token,
    databases, log, socket and the other agents' workspaces)."""
    homes = [Home.from_env().root]
    if workspace.parent.name == "workspaces":  # <home>/workspaces/<agent>
        homes.append(workspace.parent.parent)
    return list(dict.fromkeys(Path(os.path.realpath(home)) for home in homes))


async def run_process(
    argv: Sequence[str],
    *,
    workspace: Path,
    sandboxed: bool,
    env: Mapping[str, str],
    timeout_s: float,
    cap_bytes: int,
    pass_fds: Iterable[int] = (),
) -> Finished:
    """Run `argv` in `workspace` through the launcher, confined if `sandboxed`."""
    homes = protected_homes(workspace)
    if sandboxed:
        sandbox.log_dropped(env.get("PATH", ""), homes)
    command = sandbox.launcher(workspace, list(argv), confined=sandboxed, protected=homes)
    started = time.monotonic()
    loop = asyncio.get_running_loop()
    captured = HeadTail(cap_bytes)
    transport, child = await loop.subprocess_exec(
        lambda: _Child(captured),
        *command,
        cwd=workspace,
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )
    timed_out = False
    finished = False
    try:
        await asyncio.wait_for(child.exited.wait(), timeout_s)
        finished = True
    except TimeoutError:
        timed_out = True
    finally:
        # Also on cancellation: the turn is gone, so is everything it started.
        pid = transport.get_pid()
        if not finished:
            await _stop(pid, child)
        _kill_group(pid)
        await _settle(child)
        transport.close()
    return Finished(
        output=captured.text(),
        exit_code=None if timed_out else transport.get_returncode(),
        seconds=time.monotonic() - started,
        timed_out=timed_out,
    )


async def _stop(pid: int, child: _Child) -> None:
    """Ask the launcher to end its tree, and give it a moment to."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(child.exited.wait(), STOP_WAIT_S)


class _Child(asyncio.SubprocessProtocol):
    """Output straight into the capture; exit and end-of-output as events.

    A protocol rather than `create_subprocess_exec`: on Python 3.11,
    `Process.wait()` does not return until the output pipe closes, so a
    background child holding it would make a finished command look running.
    """

    def __init__(self, captured: HeadTail) -> None:
        self.captured = captured
        self.exited = asyncio.Event()
        self.drained = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.captured.write(data if isinstance(data, bytes) else data.encode())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self.drained.set()

    def process_exited(self) -> None:
        self.exited.set()


def _kill_group(pgid: int) -> None:
    # The group outlives its leader while any member lives; once all are gone
    # there is nothing to kill.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def _settle(child: _Child) -> None:
    """Let the killed group's exit and last output arrive, briefly: a process
    outside the group may hold the pipe open for ever."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(child.exited.wait(), KILL_WAIT_S)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(child.drained.wait(), DRAIN_S)
