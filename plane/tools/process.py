"""Running a child process for a tool: bounded in time, output and reach.

Every child starts in its own session (so its own process group), with stdin
closed, stdout and stderr merged in the order they were written, and a scrubbed
environment: the daemon's environment holds the providers' API keys, and a
tool's output goes straight to a model. When the command returns, times out or
its turn is cancelled, the whole group is killed: nothing a tool started keeps
running, and nothing it left behind can hold the output pipe open. (A child
that makes its own session escapes the group; the pipe is then abandoned after
a short drain rather than waited on.)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from plane.tools.capture import HeadTail

DRAIN_S = 0.5
"""After the group is killed, how long its output may take to arrive."""

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


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    cap_bytes: int,
) -> Finished:
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    captured = HeadTail(cap_bytes)
    assert proc.stdout is not None
    pump = asyncio.create_task(_pump(proc.stdout, captured))
    timed_out = False
    try:
        await asyncio.wait_for(proc.wait(), timeout_s)
    except TimeoutError:
        timed_out = True
    finally:
        # Also on cancellation: the turn is gone, so is everything it started.
        _kill_group(proc.pid)
        await _reap(proc, pump)
    return Finished(
        output=captured.text(),
        exit_code=None if timed_out else proc.returncode,
        seconds=time.monotonic() - started,
        timed_out=timed_out,
    )


async def _pump(stream: asyncio.StreamReader, into: HeadTail) -> None:
    while chunk := await stream.read(65536):
        into.write(chunk)


def _kill_group(pgid: int) -> None:
    # The group outlives its leader while any member lives; once all are gone
    # there is nothing to kill.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def _reap(proc: asyncio.subprocess.Process, pump: asyncio.Task[None]) -> None:
    await proc.wait()
    try:
        await asyncio.wait_for(pump, DRAIN_S)
    except TimeoutError:
        pass  # wait_for cancelled the pump: a process outside the group holds the pipe
