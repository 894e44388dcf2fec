"""The one place that decides whether a path is inside an agent's workspace.

Every file tool sends the model's path through `resolve_inside` before it
touches the disk, so confinement is argued once, here: the path is joined to
the workspace, resolved *physically* (symlinks followed, then `..` applied, as
the kernel would), and refused unless the result is the workspace itself or
below it. A symlink pointing outside is refused however it is reached; one
pointing elsewhere inside is fine.

This guards the file tools. `run_command` runs a real shell with the
workspace as its working directory: that is a convenience, not a sandbox.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from plane.errors import ToolError

MAX_PATH_CHARS = 4096
MAX_NAME_BYTES = 255


def shown(path: str, limit: int = 120) -> str:
    """A path as quoted back to the model: in backticks, cut if very long."""
    if len(path) > limit:
        path = path[: limit - 1] + "…"
    return f"`{path}`"


def resolve_inside(root: Path, path: str) -> Path:
    """The real location of `path` (relative to `root`, or absolute), which is
    `root` or inside it; otherwise a `ToolError` naming the path."""
    if "\x00" in path:
        visible = path.replace("\x00", "\\0")
        raise ToolError(f"The path {shown(visible)} contains a NUL byte.")
    if not path.strip():
        raise ToolError("The path is empty; use `.` for the workspace itself.")
    if len(path) > MAX_PATH_CHARS:
        raise ToolError(f"The path is {len(path)} characters long; the limit is {MAX_PATH_CHARS}.")
    for part in Path(path).parts:
        if len(os.fsencode(part)) > MAX_NAME_BYTES:
            raise ToolError(
                f"The path {shown(path)} has a name longer than {MAX_NAME_BYTES} bytes."
            )
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(real_root / path))
    if real != real_root and real_root not in real.parents:
        raise ToolError(f"{shown(path)} is outside the workspace.")
    return real


def refuse_special(real: Path, path: str) -> None:
    """A FIFO, socket or device would block a reader for ever (and a thread
    cannot be stopped); the file tools take regular files and directories."""
    try:
        mode = real.stat().st_mode
    except OSError:
        return  # missing (or unreachable): the caller's open says which
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise ToolError(f"{shown(path)} is not a regular file (a FIFO, socket or device).")


def relative(root: Path, real: Path) -> str:
    """How a resolved path inside `root` is written back to the model."""
    rel = real.relative_to(os.path.realpath(root)).as_posix()
    return rel or "."


def os_failure(error: OSError, path: str) -> ToolError:
    """An `OSError` from touching `path`, as a sentence the model can act on."""
    reasons = {
        errno.ENOENT: "does not exist",
        errno.EACCES: "is not readable or writable here (permission denied)",
        errno.EPERM: "is not readable or writable here (operation not permitted)",
        errno.EISDIR: "is a directory",
        errno.ENOTDIR: "has a part that is not a directory",
        errno.ELOOP: "is a symlink loop",
        errno.ENAMETOOLONG: "is too long for the file system",
        errno.ENOSPC: "could not be written: the disk is full",
        errno.EROFS: "is on a read-only file system",
    }
    reason = reasons.get(error.errno or 0, f"could not be used ({error.strerror or error})")
    return ToolError(f"{shown(path)} {reason}.")
