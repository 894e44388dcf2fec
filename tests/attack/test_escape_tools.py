"""Escape: every way out an agent could try through its own tools, tried for real.

A real plane home in tmp_path (token, plane.db, refs.db, plane.log, another
agent's workspace), the agent's workspace inside it, the real tools called
through the registry as the turn loop calls them, real processes racing them,
and run_command in the real sandbox, as root where the machine runs as root.
Each attempt must be refused with a sentence, and leave nothing changed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plane.clock import ManualClock
from plane.tools import process, registry, sandbox
from tests.plane.tools.conftest import NOW, FakeContext
from tests.support.processes import running

SECRET = "the-operator-secret-7f3a"
pytestmark = pytest.mark.skipif(not Path("/proc/self/ns/pid").exists(), reason="needs Linux")
needs_landlock = pytest.mark.skipif(sandbox.abi() == 0, reason="this kernel has no Landlock")
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="proves what root cannot do")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A plane home with everything an agent must never read, and this agent's
    workspace inside it, as the plane lays it out."""
    return laid_out(tmp_path / "plane-home", monkeypatch)


@pytest.fixture
def home_in_dev(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """`home`, on the tmpfs under /dev that Linux mounts for shared memory."""
    if not os.access("/dev/shm", os.W_OK):
        pytest.skip("/dev/shm is not writable here")
    with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
        yield laid_out(Path(tmp) / "plane-home", monkeypatch)


def laid_out(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("token", "plane.db", "refs.db", "plane.log"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"{SECRET} in {name}\n")
    (root / "workspaces" / "agent").mkdir(parents=True)
    (root / "workspaces" / "other").mkdir()
    (root / "workspaces" / "other" / "notes.txt").write_text(f"{SECRET} of another agent\n")
    monkeypatch.setenv("PLANE_HOME", str(root))
    monkeypatch.setenv("TEST_PLANE_SECRET", SECRET)  # in the plane's own environment
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    place = tmp_path / "outside"
    place.mkdir()
    (place / "f.txt").write_text(f"{SECRET} outside\n")
    return place


def context(home: Path, *, sandboxed: bool) -> FakeContext:
    return FakeContext(
        agent="agent",
        workspace=home / "workspaces" / "agent",
        clock=ManualClock(NOW),
        sandboxed=sandboxed,
    )


async def call(ctx: FakeContext, tool: str, **arguments: object) -> tuple[bool, str]:
    result = await registry.call(tool, json.dumps(arguments), ctx)
    assert "failed unexpectedly" not in result.text, result.text  # a refusal, never a crash
    return result.ok, result.text


def _parent(pid: int) -> int | None:
    """Its parent's PID; None once it has gone (between `running` and here)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError):
        return None


def gone(prefix: str, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while running(prefix, at_start=True):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# -- 1. the file tools against a symlink swapped in a tight loop -------------

SWAPPER = """
import ctypes, os, sys
os.chdir(sys.argv[1])
os.symlink(sys.argv[2], "d.link")
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
while True:  # d/ and the symlink trade names atomically: d always exists, as one or the other
    libc.renameat2(AT_FDCWD, b"d", AT_FDCWD, b"d.link", RENAME_EXCHANGE)
"""


@pytest.fixture
def swapping(home: Path, outside: Path):
    """`d/` in the workspace, swapped for a symlink to `outside/` and back, for ever
    (as a process the agent left behind would, had it survived its command)."""
    workspace = home / "workspaces" / "agent"
    (workspace / "d").mkdir()
    (workspace / "d" / "f.txt").write_text("inside\n")
    (outside / "only-outside.txt").write_text(f"{SECRET}\n")
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(workspace), str(outside)])
    time.sleep(0.1)
    yield workspace
    swapper.kill()
    swapper.wait()


@pytest.mark.slow
async def test_reads_writes_and_greps_never_reach_through_a_swapped_directory(
    home: Path, outside: Path, swapping: Path
):
    ctx = context(home, sandboxed=False)
    leaks: list[str] = []
    refused = served = 0
    for n in range(300):
        ok, text = await call(ctx, "read_file", path="d/f.txt")
        refused += not ok
        served += text == "inside"
        if SECRET in text:
            leaks.append(f"read {n}")
        ok, text = await call(ctx, "write_file", path=f"d/w{n}.txt", content="pwned")
        refused += not ok
        if n % 6 == 0:  # 50 greps, half of them walking into d/ from the top
            ok, text = await call(
                ctx, "grep", pattern="outside|inside", path="d" if n % 12 else "."
            )
            if SECRET in text:
                leaks.append(f"grep {n}")
        ok, text = await call(ctx, "list_files", path="d")
        if "only-outside" in text:
            leaks.append(f"list {n}")
    landed = sorted(set(os.listdir(outside)) - {"f.txt", "only-outside.txt"})
    kinds = {
        kind: sum(leak.startswith(kind) for leak in leaks) for kind in ("read", "grep", "list")
    }
    assert (leaks, landed) == ([], []), f"leaked {kinds}, {len(landed)} of 300 writes outside"
    assert (outside / "f.txt").read_text() == f"{SECRET} outside\n"
    assert served and refused < 600  # it kept working while attacked; refused when d/ was a link


async def test_a_patch_never_writes_through_a_swapped_directory(
    home: Path, outside: Path, swapping: Path
):
    ctx = context(home, sandboxed=False)
    for n in range(100):
        patch = f"--- /dev/null\n+++ b/d/p{n}.txt\n@@ -0,0 +1 @@\n+pwned\n"
        await call(ctx, "apply_patch", patch=patch)
    landed = sorted(set(os.listdir(outside)) - {"f.txt", "only-outside.txt"})
    assert landed == [], f"{len(landed)} of 100 patches wrote outside"


# -- 2. a command's whole process tree ends with it ---------------------------


def leavers(mark: str) -> str:
    """Four ways to leave a command behind, each a `sleep {mark}N`: a mark of
    its own per test, so tests run side by side (xdist) never count each
    other's processes."""
    return (
        f"setsid -f sleep {mark}1; "
        f"(sleep {mark}2 &); "
        f"nohup sleep {mark}3 >/dev/null 2>&1 & disown; "
        f'python3 -c \'import os; os.fork() or (os.setsid(), os.fork() or os.execvp("sleep", '
        f'["sleep", "{mark}4"]))\'; '
    )


HOWS = ["returns", "times out", "is cancelled"]


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandboxed", "unconfined"])
@pytest.mark.parametrize("how", HOWS)
@pytest.mark.slow
async def test_nothing_a_command_starts_outlives_it(home: Path, sandboxed: bool, how: str):
    if sandboxed and sandbox.abi() == 0:
        pytest.skip("this kernel has no Landlock")
    ctx = context(home, sandboxed=sandboxed)
    mark = f"7{HOWS.index(how) * 2 + sandboxed + 1}."  # 71. … 76.: one a case
    tail = {"returns": "echo done", "times out": "sleep 30", "is cancelled": "sleep 30"}[how]
    arguments = {"command": leavers(mark) + tail, "timeout_s": 1 if how == "times out" else 60}
    task = asyncio.create_task(call(ctx, "run_command", **arguments))
    if how == "is cancelled":
        for _ in range(3000):  # a loaded machine may take seconds to start them
            if len(running(f"sleep {mark}", at_start=True)) == 4:
                break
            await asyncio.sleep(0.01)
        assert len(running(f"sleep {mark}", at_start=True)) == 4
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        ok, text = await task
        assert ok == (how == "returns"), text
    assert gone(f"sleep {mark}")


async def test_a_launcher_killed_outright_takes_its_tree_with_it(home: Path):
    ctx = context(home, sandboxed=False)
    task = asyncio.create_task(call(ctx, "run_command", command="setsid -f sleep 78.1; sleep 78.2"))
    for _ in range(500):
        if len(running("sleep 78.", at_start=True)) == 2:
            break
        await asyncio.sleep(0.01)
    (launcher,) = [  # the launcher, not the namespace's init forked from it
        pid
        for pid in running(f"{sys.executable} -I -m plane.tools.sandbox", at_start=True)
        if _parent(pid) == os.getpid()
    ]
    os.kill(launcher, signal.SIGKILL)
    await task
    assert gone("sleep 78.")


def test_a_command_is_recognisable_by_its_pid_namespace(home: Path):
    """What the plane's socket can check: /proc/PID/ns/pid is not the plane's."""
    workspace = home / "workspaces" / "agent"
    done = subprocess.run(
        sandbox.launcher(workspace, ["sh", "-c", "readlink /proc/self/ns/pid"], confined=False),
        capture_output=True,
        text=True,
        timeout=30,
        cwd=workspace,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() != os.readlink("/proc/self/ns/pid")


# -- 3. the sandbox keeps the plane's secrets out of reach ---------------------


def _lines(text: str) -> str:
    return text.split("\n", 1)[1]


@needs_landlock
async def test_nothing_of_the_planes_home_is_readable_even_under_an_allowed_root(
    home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    # PATH names the home's parent and the home itself: neither may become readable.
    monkeypatch.setenv("PATH", f"{home.parent}:{home}/bin:{os.environ['PATH']}")
    ctx = context(home, sandboxed=True)
    reads = [
        f"cat {home}/token",
        f"cat {home}/plane.db",
        f"cat {home}/refs.db",
        f"cat {home}/plane.log",
        f"cat {home}/workspaces/other/notes.txt",
        f"ls {home}",
        f"cat {home}/workspaces/agent/../../token",
        "cat /proc/self/root" + f"{home}/token",
        f"ln {home}/token stolen && cat stolen",
        f"ln -s {home}/token link && cat link",
    ]
    with caplog.at_level(logging.WARNING, logger="plane.tools.sandbox"):
        for command in reads:
            _, text = await call(ctx, "run_command", command=command)
            assert SECRET not in text, command
            assert "Permission denied" in text or "Invalid cross-device link" in text, text
    assert f"does not grant reading {home.parent}" in caplog.text
    assert not (ctx.workspace / "stolen").exists()


@needs_landlock
async def test_a_home_under_dev_is_not_listed_though_dev_is(home_in_dev: Path):
    """Commands may list /dev (a grant covers the whole tree beneath it), so a
    plane home on /dev/shm had its files' names listed; now that grant is left
    out while it would reach a home, and /dev's own files still work."""
    ctx = context(home_in_dev, sandboxed=True)
    for command in (f"ls {home_in_dev}", f"ls {home_in_dev}/workspaces", "ls /dev/shm"):
        _, text = await call(ctx, "run_command", command=command)
        assert "token" not in text and "other" not in text, text
        assert "Permission denied" in text, text
    _, text = await call(
        ctx, "run_command", command="echo ok > /dev/null && head -c 4 /dev/zero | wc -c"
    )
    assert "4" in _lines(text), text


@needs_landlock
@as_root
async def test_root_cannot_read_the_planes_environment_or_memory(home: Path):
    """With the host's /proc (the fallback), Landlock's ptrace scoping refuses;
    in the namespace the plane's PID does not even exist."""
    plane = os.getpid()
    workspace = home / "workspaces" / "agent"
    probe = (
        f"cat /proc/{plane}/environ; head -c 16 /proc/{plane}/mem; cat /proc/{plane}/fd/0; "
        f"ls /proc/{plane}/root/; ls /proc/{plane}/cwd/; kill -0 {plane} && echo signalled"
    )
    for namespaces in ("1", "0"):
        env = process.tool_environment(workspace)
        env["PLANE_TREE_NAMESPACES"] = namespaces
        finished = await process.run_process(
            ["sh", "-c", probe],
            workspace=workspace,
            sandboxed=True,
            env=env,
            timeout_s=20,
            cap_bytes=65536,
        )
        assert SECRET not in finished.output
        assert "signalled" not in finished.output
        if namespaces == "0":
            assert finished.output.count("Permission denied") == 5, finished.output
            assert "Operation not permitted" in finished.output, finished.output


@needs_landlock
@as_root
async def test_a_root_command_has_no_capabilities_and_few_devices(home: Path):
    ctx = context(home, sandboxed=True)
    ok, text = await call(ctx, "run_command", command="grep ^Cap /proc/self/status")
    assert ok and text.count("0000000000000000") == 5, text
    for line in _lines(text).splitlines()[:-1]:
        assert line.split()[1] == "0000000000000000", text
    attempts = {
        "mount -t tmpfs none .": "permission denied",
        "unshare -m true": "operation not permitted",
        "echo plane-escape-test > /dev/kmsg": "permission denied",
        "head -c 1 /dev/loop0": "permission denied",
        "touch /dev/shm/plane-escape-test": "permission denied",
        f"chown 1234 {ctx.workspace}/../other": "operation not permitted",
    }
    for command, says in attempts.items():
        _, text = await call(ctx, "run_command", command=command)
        assert says in text.lower() and "[exit 0 " not in text, (command, text)
    _, text = await call(
        ctx,
        "run_command",
        command="echo x > /dev/null; head -c 4 /dev/urandom | wc -c; head -c 2 /dev/zero | wc -c",
    )
    assert "[exit 0 " in text and "4\n2\n" in text, text


@needs_landlock
async def test_signals_and_abstract_sockets_do_not_cross_the_sandbox(home: Path):
    if sandbox.abi() < 6:
        pytest.skip("Landlock scopes need ABI 6")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = f"plane-escape-{os.getpid()}"
    listener.bind("\0" + name)
    listener.listen()
    try:
        ctx = context(home, sandboxed=True)
        connect = (
            "python3 -I -c 'import socket; s = socket.socket(socket.AF_UNIX); "
            f's.connect("\\0{name}"); print("connected")\''
        )
        _, text = await call(ctx, "run_command", command=connect)
        assert "connected" not in _lines(text) and "PermissionError" in text, text
    finally:
        listener.close()


@needs_landlock
async def test_an_odd_path_entry_is_skipped_and_the_command_still_runs_confined(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    a_file = tmp_path / "not-a-directory"
    a_file.write_text("")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    monkeypatch.setenv("PATH", f"{a_file}:{loop}:relative/bin::{os.environ['PATH']}")
    ctx = context(home, sandboxed=True)
    ok, text = await call(ctx, "run_command", command=f"echo ran; cat {home}/token")
    assert ok and "ran\n" in text, text
    assert "Landlock" not in text and SECRET not in text and "Permission denied" in text


# -- 4. the table: each attempt refused with a sentence ----------------------

REFUSALS: list[tuple[str, dict[str, object], str]] = [
    ("read_file", {"path": "../../token"}, "`../../token` is outside the workspace."),
    ("read_file", {"path": "../other/notes.txt"}, "is outside the workspace."),
    ("read_file", {"path": "{home}/token"}, "is outside the workspace."),
    ("read_file", {"path": "/etc/passwd"}, "`/etc/passwd` is outside the workspace."),
    ("read_file", {"path": "/proc/self/root{home}/token"}, "is outside the workspace."),
    ("read_file", {"path": "/proc/self/environ"}, "is outside the workspace."),
    ("read_file", {"path": "to_home/token"}, "`to_home/token` is outside the workspace."),
    ("read_file", {"path": "to_token"}, "`to_token` is outside the workspace."),
    ("read_file", {"path": "to_proc/self/environ"}, "is outside the workspace."),
    ("read_file", {"path": "up/agent/../token"}, "is outside the workspace."),
    ("read_file", {"path": "loop"}, "`loop` is a symlink loop."),
    ("read_file", {"path": "fifo"}, "`fifo` is not a regular file (a FIFO, socket or device)."),
    ("read_file", {"path": "a\x00b"}, "The path `a\\0b` contains a NUL byte."),
    ("read_file", {"path": "x" * 256}, "has a name longer than 255 bytes."),
    ("read_file", {"path": "a/" * 2100}, "characters long; the limit is 4096."),
    ("write_file", {"path": "../../token", "content": "x"}, "is outside the workspace."),
    ("write_file", {"path": "to_home/new", "content": "x"}, "is outside the workspace."),
    ("write_file", {"path": "to_token", "content": "x"}, "is outside the workspace."),
    ("write_file", {"path": "new/../../../x", "content": "x"}, "is outside the workspace."),
    ("write_file", {"path": "fifo", "content": "x"}, "is not a regular file"),
    ("write_file", {"path": "{home}/plane.db", "content": "x"}, "is outside the workspace."),
    ("list_files", {"path": ".."}, "`..` is outside the workspace."),
    ("list_files", {"path": "to_home"}, "`to_home` is outside the workspace."),
    ("list_files", {"path": "/"}, "`/` is outside the workspace."),
    ("grep", {"pattern": "x", "path": "to_home"}, "`to_home` is outside the workspace."),
    ("grep", {"pattern": "x", "path": "../.."}, "`../..` is outside the workspace."),
    ("grep", {"pattern": "x", "path": "fifo"}, "is not a regular file"),
    ("apply_patch", {"patch": "--- /dev/null\n+++ b/../../token\n@@ -0,0 +1 @@\n+x\n"}, "outside"),
    ("apply_patch", {"patch": "--- a/to_token\n+++ b/to_token\n@@ -1 +1 @@\n-a\n+b\n"}, "outside"),
    ("ask_scout", {"question": "?", "paths": ["to_home"]}, "`to_home` is outside the workspace."),
]


@pytest.fixture
def baited(home: Path) -> FakeContext:
    """The agent's workspace, with every kind of way out an agent can make."""
    ctx = context(home, sandboxed=False)
    workspace = ctx.workspace
    (workspace / "to_home").symlink_to(home)
    (workspace / "to_token").symlink_to(home / "token")
    (workspace / "to_proc").symlink_to("/proc")
    (workspace / "up").symlink_to("..")
    (workspace / "loop").symlink_to("loop")
    os.mkfifo(workspace / "fifo")
    return ctx


async def test_every_way_out_through_the_file_tools_is_refused_with_a_sentence(
    home: Path, baited: FakeContext
):
    before = {p: p.read_text() for p in home.rglob("*") if p.is_file() and "agent" not in p.parts}
    refused = 0
    for tool, arguments, says in REFUSALS:
        arguments = {
            k: v.replace("{home}", str(home)) if isinstance(v, str) else v
            for k, v in arguments.items()
        }
        ok, text = await call(baited, tool, **arguments)
        assert not ok, (tool, arguments, text)
        assert says in text and SECRET not in text, (tool, arguments, text)
        assert "Traceback" not in text and len(text) < 300
        refused += 1
    after = {p: p.read_text() for p in home.rglob("*") if p.is_file() and "agent" not in p.parts}
    assert after == before
    assert refused == len(REFUSALS) == 30
