"""A tool's whole process tree, ended with it: the launcher's half.

`python -m plane.tools.sandbox … -- COMMAND` runs here, between the plane and
the command, and makes sure nothing the command starts outlives it — not a
`setsid -f` daemon, not a double fork, not when the plane kills the launcher
on a timeout or a cancelled turn, not when the plane itself dies:

    plane ── launcher ─┬─ init (PID 1 of a new PID namespace) ── COMMAND ── …
                       └─ (where namespaces are unavailable: COMMAND directly)

**A PID namespace** (unshare `CLONE_NEWPID | CLONE_NEWNS`, with
`CLONE_NEWUSER` and a one-uid, one-gid map when the plane is not root). Its
first process is a tiny init that starts the command, reaps orphans, and exits
the moment the command does; the kernel then kills everything left in the
namespace, however it detached. The init dies with the launcher
(`PR_SET_PDEATHSIG`) and the launcher with the plane, so a SIGKILL anywhere
above ends the tree too. The command gets a fresh `/proc` of its own (in a
private mount namespace), so `ps`, `kill $(pgrep …)` and `$!` agree, and the
plane's own processes are not even listed. **How to recognise one of these
processes from outside:** `/proc/PID/ns/pid` differs from the plane's own
`/proc/self/ns/pid` (it names the command's namespace, which the plane never
enters).

**Without namespaces** (a kernel or container that refuses them) the launcher
becomes a child subreaper (`PR_SET_CHILD_SUBREAPER`): every orphan of the tree
is re-parented to it, and when the command exits, or the launcher is asked to
stop (SIGTERM, which the plane sends first and the plane's death sends too),
it kills its descendants until none is left. Only a SIGKILL of the launcher
itself can leave a process behind in this mode, which is why the plane asks
with SIGTERM before it kills.

The launcher exits as the command did (the same code, or the same signal), so
the plane reports `exit 3` or `killed by SIGSEGV` as if it had run the command
itself. Standard library only: this runs before the command, in every call.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import select
import signal
import sys
import time
from collections.abc import Callable, Sequence

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 2, 4, 8, 0x4000, 1 << 18
_RESET = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM, signal.SIGQUIT)
"""Dispositions Python changes at start-up (or we do); a command starts with the defaults."""
NOT_FOUND = 127
GONE = 1
"""The launcher's exit when the plane that started it is already gone."""
NAMESPACES_ENV = "PLANE_TREE_NAMESPACES"
"""Set to `0` in the launcher's environment to use the subreaper even where
namespaces work (how the fallback is tested)."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def run(command: Sequence[str], *, plane: int | None, before_exec: Callable[[], None]) -> int:
    """Run `command` to its end and end everything it started; return how the
    launcher should exit. `before_exec` runs in the command's process."""
    libc = _libc()
    try:
        namespaced = os.environ.get(NAMESPACES_ENV) != "0" and _enter_namespaces(libc)
    except OSError as error:  # a user namespace without its map: nothing can run in it
        print(
            f"The command was not run: its namespace could not be set up ({error}).",
            file=sys.stderr,
            flush=True,
        )
        return 126
    if namespaced:
        _die_with(libc, signal.SIGKILL, plane)
        return _as_parent_of_init(libc, command, before_exec)
    signal.signal(signal.SIGTERM, _stop_as_subreaper)
    _die_with(libc, signal.SIGTERM, plane)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    return _as_subreaper(command, before_exec)


def _die_with(libc: ctypes.CDLL, sig: int, parent: int | None) -> None:
    """Get `sig` when the parent dies; exit now if it already has."""
    libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        os._exit(GONE)


def _enter_namespaces(libc: ctypes.CDLL) -> bool:
    """Enter a new PID (and mount) namespace for the children to come; True on success."""
    uid, gid = os.geteuid(), os.getegid()
    attempts = [CLONE_NEWPID | CLONE_NEWNS] if uid == 0 else []
    attempts.append(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS)
    for flags in attempts:
        if libc.unshare(flags) != 0:
            continue
        if flags & CLONE_NEWUSER:
            # Inside, the plane's user is itself (and nobody else is anyone).
            with open("/proc/self/setgroups", "w") as f:
                f.write("deny")
            with open("/proc/self/uid_map", "w") as f:
                f.write(f"{uid} {uid} 1")
            with open("/proc/self/gid_map", "w") as f:
                f.write(f"{gid} {gid} 1")
        return True
    return False


# -- with a PID namespace ---------------------------------------------------


def _as_parent_of_init(
    libc: ctypes.CDLL, command: Sequence[str], before_exec: Callable[[], None]
) -> int:
    status_r, status_w = os.pipe()
    life_r, life_w = os.pipe()  # the init sees this close if the launcher dies
    init = os.fork()
    if init == 0:
        try:
            os.close(status_r)
            os.close(life_w)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            if select.select([life_r], [], [], 0)[0]:
                os._exit(GONE)  # the launcher died before the death signal was set
            _init(libc, command, before_exec, status_w)
        finally:
            os._exit(GONE)
    os.close(status_w)
    os.close(life_r)
    # Asked to stop: the namespace ends with its init, and everything in it.
    signal.signal(signal.SIGTERM, lambda *_: _kill(init))
    raw = _wait_for(init)
    with os.fdopen(status_r, "rb") as f:
        reported = f.read(4)
    if len(reported) == 4:
        raw = int.from_bytes(reported, "little")
    return _exit_like(raw)


def _init(
    libc: ctypes.CDLL, command: Sequence[str], before_exec: Callable[[], None], status_w: int
) -> None:
    """PID 1: start the command, reap whatever is orphaned to us, and leave
    (taking the namespace with us) when the command exits."""
    for sig in _RESET:
        signal.signal(sig, signal.SIG_DFL)  # PID 1 ignores what it does not handle
    child = os.fork()
    if child == 0:
        _exec(command, before_exec, fresh_proc=libc)
    while True:
        try:
            pid, raw = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == child:
            os.write(status_w, raw.to_bytes(4, "little"))
            break
    os._exit(0)


def _mount_proc(libc: ctypes.CDLL) -> None:
    """A /proc that shows this namespace: only after every mount is private,
    so nothing we mount can propagate to the plane's view."""
    if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return
    libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None)


# -- without namespaces -----------------------------------------------------


def _as_subreaper(command: Sequence[str], before_exec: Callable[[], None]) -> int:
    child = os.fork()
    if child == 0:
        _exec(command, before_exec, fresh_proc=None)
    raw = _wait_for(child)
    _end_descendants()
    return _exit_like(raw)


def _stop_as_subreaper(sig: int, frame: object) -> None:
    _end_descendants()
    os._exit(128 + sig)


def _end_descendants() -> None:
    """Kill every process re-parented to us, and what they leave, until none is left."""
    me = os.getpid()
    while True:
        children = _children_of(me)
        if not children:
            return
        for pid in children:
            _kill(pid)
        time.sleep(0.002)
        _reap()


def _children_of(parent: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == parent:
            found.append(int(name))
    return found


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


# -- shared -----------------------------------------------------------------


def _exec(
    command: Sequence[str], before_exec: Callable[[], None], *, fresh_proc: ctypes.CDLL | None
) -> None:
    """In the command's process: prepare, then become the command."""
    try:
        if fresh_proc is not None:
            _mount_proc(fresh_proc)
        before_exec()
        for sig in _RESET:
            signal.signal(sig, signal.SIG_DFL)
        os.execvp(command[0], list(command))
    except OSError as error:
        print(f"{command[0]}: {error.strerror or error}", file=sys.stderr, flush=True)
    finally:
        os._exit(NOT_FOUND)


def _wait_for(child: int) -> int:
    """The raw wait status of `child`, reaping any other child meanwhile."""
    while True:
        pid, raw = os.waitpid(-1, 0)
        if pid == child:
            return raw


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def _exit_like(raw: int) -> int:
    """Exit as the command did: its code, or its signal (without a core dump)."""
    if os.WIFSIGNALED(raw):
        sig = os.WTERMSIG(raw)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig
    return os.waitstatus_to_exitcode(raw)
