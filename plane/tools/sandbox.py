"""The sandbox a tool's process runs in: Linux Landlock, through a tiny launcher.

An agent's shell may read and run what the system has (`/usr`, `/etc`,
`/proc`, the Python the plane runs on) and do anything inside its own
workspace — and nothing else: not the plane's home (its token, `plane.db`,
`refs.db`, `plane.log`, the socket's directory), not another agent's
workspace, not the operator's files. Landlock is enforced by the kernel on the
command and everything it starts, and needs no privileges.

    python -m plane.tools.sandbox [--unconfined] [--home DIR]... [--read DIR]... \
        [--plane PID] WORKSPACE -- COMMAND...

starts COMMAND in a process tree of its own (see `tree.py`: a PID namespace,
so the tree ends with the command), confined unless `--unconfined`. On a
kernel without Landlock it refuses to run (exit 126) rather than run
unconfined: `sandbox: false` in agents.yaml is how an operator says otherwise.

What the confinement is, step by step, in the command's own process:

- **Landlock rules**: read (and execute) beneath the system directories, the
  Python the plane runs on and the directories on PATH — except any of those
  that contains the plane's home (`--home`) or lies inside it: such a root is
  dropped, and the plane logs why. Directories given with `--read` (an MCP
  server's own install), read-only, under the same rule. Everything beneath
  the workspace. Of `/dev`
  only what commands need: `null`, `zero`, `full`, `tty` (read and write),
  `random`, `urandom`, `pts/` (read). A PATH entry that cannot be opened, or is
  not a directory, is skipped: the command still runs, confined.
- **Landlock scopes** (ABI 6 and later): no signal to a process outside the
  sandbox (the plane, its launcher) and no abstract Unix socket outside it.
- **ptrace scoping** (every ABI): a confined process cannot trace, or read the
  `/proc/PID/environ`, `mem` or `fd/` of, a process outside its sandbox — the
  plane's API keys stay out of reach even when the plane runs as root.
- **No capabilities**: when the plane runs as root, the launcher locks the
  root-is-privileged rules off (securebits), empties the bounding, ambient,
  inheritable, permitted and effective sets, and sets no-new-privileges, so a
  root command runs as a root without any power over the sandbox.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_RULESET_VERSION = 1
_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
TRUNCATE = 1 << 14
IOCTL_DEV = 1 << 15
READ = EXECUTE | READ_FILE | READ_DIR
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
"""The only rights a rule on a file (rather than a directory) may carry."""
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt", "/proc", "/sys")
DEVICES = {
    "/dev/null": READ_FILE | WRITE_FILE | TRUNCATE,
    "/dev/zero": READ_FILE | WRITE_FILE | TRUNCATE,
    "/dev/full": READ_FILE | WRITE_FILE | TRUNCATE,
    "/dev/tty": READ_FILE | WRITE_FILE | TRUNCATE,
    "/dev/random": READ_FILE,
    "/dev/urandom": READ_FILE,
    "/dev/pts": READ_FILE | READ_DIR,
    "/dev": READ_DIR,  # names only: `ls /dev`, and the way to the files above
}
REFUSED = 126

# Capabilities (linux/capability.h, linux/prctl.h, linux/securebits.h).
_PR_CAPBSET_DROP = 24
_PR_SET_SECUREBITS = 28
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_SECURE_ALL_LOCKED = 0xEF
"""NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE set and locked; KEEP_CAPS locked off."""
_CAPABILITY_VERSION_3 = 0x20080522


class NoLandlock(OSError):
    """The kernel has no Landlock (or it is disabled): the sandbox cannot exist here."""


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi() -> int:
    """Landlock's ABI version here; 0 when the kernel has none."""
    version = _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), _RULESET_VERSION)
    return max(int(version), 0)


def handled(version: int) -> int:
    """Every filesystem right this ABI knows: all of them are denied unless granted."""
    bits = {1: 13, 2: 14, 3: 15, 4: 15}.get(version, 16)
    return (1 << bits) - 1


def _overlaps(root: Path, protected: Iterable[Path]) -> Path | None:
    """The protected directory `root` would expose (it holds it, or lies in it)."""
    for home in protected:
        if root == home or root in home.parents or home in root.parents:
            return home
    return None


def readable_roots(
    path_variable: str = "", protected: Iterable[Path] = (), extra: Iterable[Path] = ()
) -> tuple[list[Path], dict[Path, Path]]:
    """The directories the command may read: the system, the Python the tools
    run on, the directories on PATH (a version manager's shims need their
    root too) and `extra`. Only existing directories, absolute, each once. Any
    that would expose a protected directory (the plane's home) is left out and
    returned in the second value, with the home it would have exposed."""
    protected = [Path(os.path.realpath(p)) for p in protected]
    candidates = [Path(p) for p in SYSTEM] + [p for p in extra if p.is_absolute()]
    candidates += [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent]
    for entry in path_variable.split(os.pathsep):
        if not entry.startswith("/"):
            continue  # empty, relative or odd: nothing a sandbox can name
        directory = Path(entry)
        candidates.append(directory.parent if directory.name == "shims" else directory)
    roots: list[Path] = []
    dropped: dict[Path, Path] = {}
    for candidate in dict.fromkeys(candidates):
        try:
            real = Path(os.path.realpath(candidate))
            if not stat.S_ISDIR(os.stat(real).st_mode):
                continue
        except (OSError, ValueError):
            continue  # unreadable, missing, a loop: skipped, never an error
        home = _overlaps(real, protected)
        if home is not None:
            dropped[candidate] = home
        elif real not in roots:
            roots.append(real)
    return roots, dropped


_LOGGED: set[tuple[Path, Path]] = set()


def log_dropped(path_variable: str, protected: Iterable[Path], extra: Iterable[Path] = ()) -> None:
    """Say in the plane's log (once each) which readable roots the sandbox
    leaves out, and why."""
    for root, home in readable_roots(path_variable, protected, extra)[1].items():
        if (root, home) in _LOGGED:
            continue
        _LOGGED.add((root, home))
        log.warning(
            "The sandbox does not grant reading %s: it holds or lies in the plane's home %s, "
            "which agents' commands must not read.",
            root,
            home,
        )


def confine(workspace: Path, protected: Iterable[Path] = (), extra: Iterable[Path] = ()) -> None:
    """Restrict this process (and what it execs) to reading the system and
    owning `workspace`. Raises `NoLandlock` when the kernel has none, OSError
    when the ruleset cannot be built or applied."""
    version = abi()
    if version == 0:
        raise NoLandlock(errno.EOPNOTSUPP, "this kernel has no Landlock")
    libc = _libc()
    rights = handled(version)
    attr = _RulesetAttr(rights, 0, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
    size = ctypes.sizeof(attr) if version >= 6 else 8
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    protected = [Path(os.path.realpath(p)) for p in protected]
    try:
        roots, _ = readable_roots(os.environ.get("PATH", ""), protected, extra)
        for root in roots:
            _allow(libc, ruleset, root, READ & rights, required=False)
        for device, access in DEVICES.items():
            # A grant covers the whole tree beneath it: with a home on /dev/shm,
            # listing /dev would list the home too, so it is not granted then.
            if access & READ_DIR and _overlaps(Path(device), protected) is not None:
                continue
            _allow(libc, ruleset, Path(device), access & rights, required=False)
        _allow(libc, ruleset, workspace, rights, required=True)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) failed")
        if libc.syscall(_RESTRICT_SELF, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)


def _allow(libc: ctypes.CDLL, ruleset: int, path: Path, access: int, *, required: bool) -> None:
    """Grant `access` beneath `path`. A path that cannot be opened is skipped
    unless `required`; a file gets only the rights a file can have."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        if required:
            raise
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= FILE_RIGHTS
        rule = _PathBeneath(access, fd)
        if libc.syscall(_ADD_RULE, ruleset, _PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def drop_capabilities() -> None:
    """Leave this process (and what it execs) no capability at all, for good:
    root's exec no longer grants any (securebits locked, bounding set empty)."""
    libc = _libc()
    if libc.prctl(_PR_SET_SECUREBITS, _SECURE_ALL_LOCKED, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        if error != errno.EPERM or _has_capabilities():
            raise OSError(error, "prctl(PR_SET_SECUREBITS) failed")
        return  # nothing to drop: an ordinary user with no capabilities
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last + 1):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"prctl(PR_CAPBSET_DROP, {cap}) failed")
    if libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAP_AMBIENT_CLEAR_ALL) failed")
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def _has_capabilities() -> bool:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("CapEff:", "CapPrm:")) and int(line.split()[1], 16):
            return True
    return False


def launcher(
    workspace: Path,
    argv: list[str],
    *,
    confined: bool = True,
    protected: Iterable[Path] = (),
    readable: Iterable[Path] = (),
) -> list[str]:
    """The argv that runs `argv` in a process tree of its own, confined to
    `workspace` unless not `confined`, with `protected` out of reach and
    `readable` readable."""
    options = [] if confined else ["--unconfined"]
    for home in protected:
        options += ["--home", str(home)]
    for directory in readable:
        options += ["--read", str(directory)]
    options += ["--plane", str(os.getpid())]
    module = [sys.executable, "-I", "-m", "plane.tools.sandbox"]
    return [*module, *options, str(workspace), "--", *argv]


def prepare(
    workspace: Path, protected: list[Path], confined: bool, readable: Iterable[Path] = ()
) -> None:
    """In the command's own process, just before exec: confine it."""
    if not confined:
        return
    confine(workspace, protected, readable)
    drop_capabilities()


def refusal(error: OSError) -> str:
    """Why the command was not run, as the model reads it."""
    if isinstance(error, NoLandlock):
        return (
            f"The command was not run: the sandbox needs Linux Landlock ({error.strerror}). "
            "Set `sandbox: false` in agents.yaml to run commands unconfined."
        )
    return f"The command was not run: the sandbox could not be set up ({error})."


USAGE = (
    "usage: python -m plane.tools.sandbox [--unconfined] [--home DIR]... [--read DIR]... "
    "[--plane PID] WORKSPACE -- COMMAND..."
)


def main(args: list[str]) -> int:
    from plane.tools import tree  # the launcher's half; the plane only builds argv

    confined, protected, readable, plane = True, [], [], None
    while args and args[0].startswith("--") and args[0] != "--":
        option = args.pop(0)
        if option == "--unconfined":
            confined = False
        elif option == "--home" and args:
            protected.append(Path(args.pop(0)))
        elif option == "--read" and args:
            readable.append(Path(args.pop(0)))
        elif option == "--plane" and args and args[0].isdigit():
            plane = int(args.pop(0))
        else:
            print(USAGE, file=sys.stderr)
            return 2
    if len(args) < 3 or args[1] != "--":
        print(USAGE, file=sys.stderr)
        return 2
    workspace, command = Path(args[0]), args[2:]

    def before_exec() -> None:
        try:
            prepare(workspace, protected, confined, readable)
        except OSError as error:
            print(refusal(error), file=sys.stderr, flush=True)
            os._exit(REFUSED)

    return tree.run(command, plane=plane, before_exec=before_exec)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
