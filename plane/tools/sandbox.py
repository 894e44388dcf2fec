"""The sandbox `run_command` runs in: Linux Landlock, through a tiny launcher.

An agent's shell may read and run what the system has (`/usr`, `/etc`,
`/proc`, the Python the plane runs on) and do anything inside its own
workspace — and nothing else: not the plane's database, not the operator's
home or keys, not another agent's workspace. Landlock is enforced by the
kernel on the command and everything it starts, and needs no privileges.

    python -m plane.tools.sandbox WORKSPACE -- COMMAND...

confines itself, then execs COMMAND. On a kernel without Landlock it refuses
to run (exit 126) rather than run unconfined: `sandbox: false` in
agents.yaml is how an operator says otherwise.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_RULESET_VERSION = 1
_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
TRUNCATE = 1 << 14
READ = EXECUTE | READ_FILE | READ_DIR
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt", "/proc", "/sys")
REFUSED = 126


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def abi() -> int:
    """Landlock's ABI version here; 0 when the kernel has none."""
    libc = ctypes.CDLL(None, use_errno=True)
    version = libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), _RULESET_VERSION)
    return max(int(version), 0)


def handled(version: int) -> int:
    """Every filesystem right this ABI knows: all of them are denied unless granted."""
    bits = {1: 13, 2: 14, 3: 15, 4: 15}.get(version, 16)
    return (1 << bits) - 1


def readable_roots(path_variable: str = "") -> list[Path]:
    """System directories, the Python the tools run on, and the directories
    on the command's PATH (a version manager's shims need their root too)."""
    roots = [Path(p) for p in SYSTEM]
    roots += [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent]
    for entry in filter(None, path_variable.split(os.pathsep)):
        directory = Path(entry)
        roots.append(directory.parent if directory.name == "shims" else directory)
    return [r for r in dict.fromkeys(roots) if r.is_absolute() and r.exists()]


def confine(workspace: Path) -> None:
    """Restrict this process (and what it execs) to reading the system and
    owning `workspace`. Raises OSError when the kernel cannot."""
    version = abi()
    if version == 0:
        raise OSError("this kernel has no Landlock")
    libc = ctypes.CDLL(None, use_errno=True)
    rights = handled(version)
    attr = ctypes.c_uint64(rights)
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(8), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for root in readable_roots(os.environ.get("PATH", "")):
            _allow(libc, ruleset, root, READ & rights)
        _allow(libc, ruleset, Path("/dev"), (READ | WRITE_FILE | TRUNCATE) & rights)
        _allow(libc, ruleset, workspace, rights)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) failed")
        if libc.syscall(_RESTRICT_SELF, ruleset, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)


def _allow(libc: ctypes.CDLL, ruleset: int, path: Path, access: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = _PathBeneath(access, fd)
        if libc.syscall(_ADD_RULE, ruleset, _PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)


def launcher(workspace: Path, argv: list[str]) -> list[str]:
    """The argv that runs `argv` confined to `workspace`."""
    return [sys.executable, "-m", "plane.tools.sandbox", str(workspace), "--", *argv]


def main(args: list[str]) -> int:
    if len(args) < 3 or args[1] != "--":
        print("usage: python -m plane.tools.sandbox WORKSPACE -- COMMAND...", file=sys.stderr)
        return 2
    try:
        confine(Path(args[0]))
    except OSError as exc:
        print(
            f"The command was not run: the sandbox needs Linux Landlock ({exc}). "
            "Set `sandbox: false` in agents.yaml to run commands unconfined.",
            file=sys.stderr,
        )
        return REFUSED
    os.execvp(args[2], args[2:])  # does not return: the command replaces this process


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
