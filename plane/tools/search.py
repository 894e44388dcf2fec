"""`grep`: a regular expression over the workspace's text files.

The search itself runs in a child process (see `scan.py` for why), bounded by
`GREP_TIMEOUT_S`, under the same launcher as `run_command` (its own process
tree, the Landlock sandbox when the plane has it on). This module checks the
arguments, finds the path inside the workspace and opens it (`locate`), and
hands the child that descriptor, so the child never resolves a path itself;
then it turns the child's outcome into a result or a sentence.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import sys
from pathlib import Path

from pydantic import Field

from plane.errors import ToolError
from plane.tools import matching, scan
from plane.tools.base import Args, Tool, ToolContext
from plane.tools.process import run_process, tool_environment
from plane.tools.workspace import (
    DIR_FLAGS,
    READ_FLAGS,
    locate,
    os_failure,
    refuse_special,
    shown,
)

GREP_TIMEOUT_S = 30
SCAN_SOURCE = Path(scan.__file__).read_text(encoding="utf-8")
"""scan.py, passed as `-c`: the sandboxed child need not be able to read the
plane's own files (in a source checkout they lie outside every readable root)."""
MATCHING_SOURCE = Path(matching.__file__).read_text(encoding="utf-8")
"""matching.py, passed as `-c`, for the same reason."""
MAX_MATCHES = 200
MAX_LINE = 300


class GrepArgs(Args):
    pattern: str = Field(min_length=1, max_length=1000, description="A Python regular expression.")
    path: str = Field(default=".", description="A file or directory, relative to your workspace.")
    glob: str | None = Field(
        default=None,
        max_length=200,
        description="Only files whose path ends like this, e.g. `*.py` or `src/*.ts`.",
    )
    ignore_case: bool = Field(default=False, description="Match regardless of case.")


async def grep(args: GrepArgs, ctx: ToolContext) -> str:
    try:
        re.compile(args.pattern)
    except re.error as error:
        raise ToolError(f"`pattern` is not a valid regular expression: {error}.") from None
    fd, rel = await asyncio.to_thread(_open_start, ctx.workspace, args.path)
    try:
        request = {
            "fd": fd,
            "base": rel,
            "pattern": args.pattern,
            "ignore_case": args.ignore_case,
            "glob": args.glob,
            "max_matches": MAX_MATCHES,
            "max_line": MAX_LINE,
        }
        finished = await run_process(
            [sys.executable, "-I", "-c", SCAN_SOURCE, json.dumps(request)],
            workspace=ctx.workspace,
            sandboxed=ctx.sandboxed,
            env=tool_environment(ctx.workspace),
            timeout_s=GREP_TIMEOUT_S,
            cap_bytes=256 * 1024,
            pass_fds=(fd,),
        )
    finally:
        os.close(fd)
    if finished.timed_out:
        raise ToolError(
            f"grep was stopped after {GREP_TIMEOUT_S}s; narrow the path or glob, "
            "or simplify the pattern."
        )
    if finished.exit_code != 0:
        raise ToolError(f"grep failed: {finished.output.strip()[-500:]}")
    if not finished.output:
        return f"(No match for `{args.pattern}` in {shown(rel)}.)"
    return finished.output.rstrip("\n")


async def grep_text(text: str, pattern: str, workspace: Path, sandboxed: bool) -> str:
    """The lines of `text` matching `pattern` (`matching.matching`), found in a
    child process stopped after `GREP_TIMEOUT_S`, as `grep`'s search is."""
    fd = os.memfd_create("grep-text")
    try:
        os.write(fd, text.encode("utf-8", "surrogatepass"))  # a memfd takes it all at once
        os.lseek(fd, 0, os.SEEK_SET)
        finished = await run_process(
            [
                sys.executable,
                "-I",
                "-c",
                MATCHING_SOURCE,
                json.dumps({"fd": fd, "pattern": pattern}),
            ],
            workspace=workspace,
            sandboxed=sandboxed,
            env=tool_environment(workspace),
            timeout_s=GREP_TIMEOUT_S,
            cap_bytes=len(text) * 4 + 64 * 1024,
            pass_fds=(fd,),
        )
    finally:
        os.close(fd)
    if finished.timed_out:
        raise ToolError(f"grep was stopped after {GREP_TIMEOUT_S}s; simplify the pattern.")
    if finished.exit_code != 0:
        raise ToolError(f"grep failed: {finished.output.strip()[-500:]}")
    return finished.output


def _open_start(workspace: Path, path: str) -> tuple[int, str]:
    """The file or directory searched, open, and its workspace-relative name."""
    with locate(workspace, path) as place:
        before = place.lstat()
        if before is None:
            raise ToolError(f"{shown(path)} does not exist.")
        refuse_special(before.st_mode, path)
        flags = DIR_FLAGS if stat.S_ISDIR(before.st_mode) else READ_FLAGS
        try:
            return place.open(flags), place.rel
        except OSError as error:
            raise os_failure(error, path) from None


TOOL = Tool(
    name="grep",
    description=(
        "Search text files in your workspace for a regular expression. Results are "
        f"`path:line:text`, at most {MAX_MATCHES}, lines cut at {MAX_LINE} characters; "
        "binary files and `.git` are skipped."
    ),
    args=GrepArgs,
    run=grep,
    timeout_s=GREP_TIMEOUT_S + 15,
    changes_nothing=True,
)
