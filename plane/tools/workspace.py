"""The one place that decides whether a path is inside an agent's workspace.

Every file tool goes through `locate`, and from there touches the disk only
through file descriptors: the workspace is opened once, and each component of
the model's path is opened relative to the directory before it with
`O_NOFOLLOW`, so there is no window between a check and a use. A process that
swaps a directory for a symlink to the plane's home between two calls, or
during one, cannot lead a tool outside: the symlink is never followed by the
kernel, only read (`readlinkat`) and then walked again from the workspace's
own descriptor, under the same rules.

Why component by component rather than `openat2(RESOLVE_BENEATH |
RESOLVE_NO_SYMLINKS)`: the guarantee is the same (every step is relative to a
descriptor already inside, and no symlink is followed by the kernel), but the
walk needs no per-architecture syscall number or ctypes, works on every Linux
kernel and Python the plane supports, and lets the plane follow symlinks that
stay inside itself, which `RESOLVE_NO_SYMLINKS` would refuse outright.

The rules, which the refusals quote:

- `..` never climbs above the workspace; an absolute path is allowed only when
  it names the workspace (as configured or as it really is) or something in it.
- A symlink is followed only by the plane, and only while its target, taken
  from where the link sits, stays inside the workspace at every step. One that
  points outside, or out and back in, is refused as outside the workspace, at
  any depth (at most 40 links per path).
- Missing directories are created (for writes) one at a time, each relative to
  its parent's descriptor.
- A hard link is the same file under another name, so it is as inside as its
  name; inside the sandbox `run_command` cannot make one to a file outside
  (Landlock refuses linking across its rules).

`run_command` is confined by the kernel instead (see `sandbox.py`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from plane.errors import ToolError

MAX_PATH_CHARS = 4096
MAX_NAME_BYTES = 255
MAX_LINKS = 40
"""Symlinks followed for one path before it counts as a loop (the kernel's own limit)."""

_PATH = os.O_PATH | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
"""Opening the last component to read: never through a symlink, never blocking on a FIFO."""
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def shown(path: str, limit: int = 120) -> str:
    """A path as quoted back to the model: in backticks, cut if very long."""
    if len(path) > limit:
        path = path[: limit - 1] + "…"
    return f"`{path}`"


@dataclass
class Place:
    """Where a path lands inside the workspace, held by descriptors.

    `parent` is the directory that holds the last component (`name`, "." for
    the workspace itself), or None when that directory does not exist yet.
    Close it (or use it as a context manager) when done."""

    rel: str
    """Its workspace-relative path as the model is shown it ("." for the workspace)."""
    name: str
    parent: int | None
    _fds: list[int] = field(default_factory=list, repr=False)

    def lstat(self) -> os.stat_result | None:
        """The last component's own status (a symlink is not followed), or None if missing."""
        if self.parent is None:
            return None
        try:
            return os.stat(self.name, dir_fd=self.parent, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def open(self, flags: int = READ_FLAGS, mode: int = 0o666) -> int:
        """Open the last component relative to its directory, never following a symlink."""
        if self.parent is None:
            raise FileNotFoundError(errno.ENOENT, "missing directory")
        return os.open(self.name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=self.parent)

    def close(self) -> None:
        while self._fds:
            os.close(self._fds.pop())

    def __enter__(self) -> Place:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def locate(root: Path, path: str, *, make_parents: bool = False) -> Place:
    """Where `path` (relative to `root`, or absolute) lands inside `root`, or a
    `ToolError` naming the path. With `make_parents`, missing directories on
    the way are created."""
    _check_text(path)
    if make_parents:
        locate(root, path).close()  # refused before any directory is made for it
    parts = _parts(root, path)
    root_fd = os.open(root, _PATH | os.O_DIRECTORY)
    place = Place(rel=".", name=".", parent=root_fd, _fds=[root_fd])
    try:
        _walk(place, root, path, parts, make_parents)
    except OSError as error:
        place.close()
        raise os_failure(error, path) from None
    except BaseException:
        place.close()
        raise
    return place


def _walk(place: Place, root: Path, path: str, parts: deque[str], make_parents: bool) -> None:
    """Consume `parts`, one component at a time, each opened relative to the
    directory before it. `dirs[i]` holds the directory named by `names[:i]`;
    names past the last held directory do not exist (yet)."""
    names: list[str] = []
    dirs = place._fds  # dirs[0] is the workspace
    links = 0
    while parts:
        part = parts.popleft()
        if part == "..":
            if not names:
                raise _outside(path)
            names.pop()
            if len(dirs) > len(names) + 1:
                os.close(dirs.pop())
            continue
        if len(names) >= len(dirs):  # below a directory that does not exist
            names.append(part)
            continue
        here = dirs[-1]
        try:
            fd = os.open(part, _PATH | os.O_NOFOLLOW, dir_fd=here)
        except FileNotFoundError:
            if parts and make_parents:
                _make_dir(here, part)
                parts.appendleft(part)
            else:
                names.append(part)
            continue
        mode = os.fstat(fd).st_mode
        if stat.S_ISLNK(mode):
            os.close(fd)
            links += 1
            if links > MAX_LINKS:
                raise ToolError(f"{shown(path)} is a symlink loop.")
            target = os.readlink(part, dir_fd=here)
            if target.startswith("/"):  # taken from the workspace itself
                names.clear()
                while len(dirs) > 1:
                    os.close(dirs.pop())
            parts.extendleft(reversed(_parts(root, target, quoted=path)))
            continue
        names.append(part)
        if not parts:
            os.close(fd)  # the last component: the tool opens it as it needs
        elif stat.S_ISDIR(mode):
            dirs.append(fd)
        else:
            os.close(fd)
            raise ToolError(f"{shown(path)} has a part that is not a directory.")
    place.rel = "/".join(names) or "."
    if len(names) > len(dirs):
        place.parent, place.name = None, names[-1]  # a directory on the way is missing
    elif len(names) == len(dirs):
        place.parent, place.name = dirs[-1], names[-1]
    else:
        place.parent, place.name = dirs[-1], "."  # ends on a directory held open


def _make_dir(parent: int, name: str) -> None:
    try:
        os.mkdir(name, 0o777, dir_fd=parent)
    except FileExistsError:
        pass  # made meanwhile: the next open looks at what is there now


def _check_text(path: str) -> None:
    if "\x00" in path:
        visible = path.replace("\x00", "\\0")
        raise ToolError(f"The path {shown(visible)} contains a NUL byte.")
    if not path.strip():
        raise ToolError("The path is empty; use `.` for the workspace itself.")
    if len(path) > MAX_PATH_CHARS:
        raise ToolError(f"The path is {len(path)} characters long; the limit is {MAX_PATH_CHARS}.")
    for part in path.split("/"):
        if len(os.fsencode(part)) > MAX_NAME_BYTES:
            raise ToolError(
                f"The path {shown(path)} has a name longer than {MAX_NAME_BYTES} bytes."
            )


def _parts(root: Path, path: str, quoted: str | None = None) -> deque[str]:
    """The components of `path` relative to the workspace: an absolute path
    must start with the workspace (as given or as it really is)."""
    if path.startswith("/"):
        for prefix in dict.fromkeys((str(root), os.path.realpath(root))):
            prefix = prefix.rstrip("/")
            if path == prefix or path.startswith(prefix + "/"):
                path = path[len(prefix) :]
                break
        else:
            raise _outside(quoted or path)
    return deque(part for part in path.split("/") if part not in ("", "."))


def _outside(path: str) -> ToolError:
    return ToolError(f"{shown(path)} is outside the workspace.")


def resolve_inside(root: Path, path: str) -> Path:
    """The real location of `path`, which is `root` or inside it; otherwise a
    `ToolError` naming the path. For checks and messages only: a tool that
    opens the file uses `locate`, never this path."""
    with locate(root, path) as place:
        real = Path(os.path.realpath(root))
        return real if place.rel == "." else real / place.rel


def refuse_special(mode: int, path: str) -> None:
    """A FIFO, socket or device would block a reader for ever (and a thread
    cannot be stopped); the file tools take regular files and directories."""
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
        errno.ELOOP: "was replaced by a symlink while in use; try again",
        errno.ENAMETOOLONG: "is too long for the file system",
        errno.ENOSPC: "could not be written: the disk is full",
        errno.EROFS: "is on a read-only file system",
        errno.ENXIO: "is not a regular file (a FIFO, socket or device)",
    }
    reason = reasons.get(error.errno or 0, f"could not be used ({error.strerror or error})")
    return ToolError(f"{shown(path)} {reason}.")
