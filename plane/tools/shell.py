"""`run_command`: a shell command in the agent's workspace.

The result is always one frame — the command, its output, then exit status
and wall time — so the model reads every run the same way and compression
sees the same shape every turn:

    $ make test
    …output…
    [exit 2 · 3.41s]
"""

from __future__ import annotations

import contextlib
import shutil
import signal

from pydantic import Field

from plane.errors import ToolError
from plane.tools.base import Args, Tool, ToolContext
from plane.tools.process import run_process, tool_environment

OUTPUT_CAP = 64 * 1024
MAX_TIMEOUT_S = 600
SHELL = shutil.which("bash") or "/bin/sh"


class RunCommandArgs(Args):
    command: str = Field(
        min_length=1,
        max_length=100_000,
        description="The shell command (bash), run with the workspace as the working directory.",
    )
    timeout_s: int = Field(
        default=30,
        ge=1,
        le=MAX_TIMEOUT_S,
        description=f"Seconds before the command is killed (1 to {MAX_TIMEOUT_S}).",
    )


async def run_command(args: RunCommandArgs, ctx: ToolContext) -> str:
    env = tool_environment(ctx.workspace)
    if ctx.sandboxed:
        scratch = ctx.workspace / ".tmp"  # /tmp is outside the sandbox
        with contextlib.suppress(OSError):  # a .tmp that is not a directory: the shell says
            scratch.mkdir()
        env["TMPDIR"] = str(scratch)
    finished = await run_process(
        [SHELL, "-c", args.command],
        workspace=ctx.workspace,
        sandboxed=ctx.sandboxed,
        env=env,
        timeout_s=args.timeout_s,
        cap_bytes=OUTPUT_CAP,
    )
    if finished.timed_out:
        status = f"killed: timed out after {args.timeout_s}s"
    elif finished.exit_code is not None and finished.exit_code < 0:
        status = f"killed by {_signal_name(-finished.exit_code)}"
    else:
        status = f"exit {finished.exit_code}"
    output = finished.output
    if output and not output.endswith("\n"):
        output += "\n"
    frame = f"$ {args.command}\n{output}[{status} · {finished.seconds:.2f}s]"
    if finished.timed_out:
        raise ToolError(frame)
    return frame


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


TOOL = Tool(
    name="run_command",
    description=(
        "Run a shell command in your workspace and get its output (stdout and stderr "
        "together), exit code and wall time. stdin is closed; anything the command "
        "started in the background is stopped when it returns. Output over 64 KB keeps "
        "its start and end, with a marker saying how much was cut."
    ),
    args=RunCommandArgs,
    run=run_command,
    timeout_s=MAX_TIMEOUT_S + 15,
)
