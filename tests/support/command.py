"""The `plane` command, run by a test: in this process (its `main`, what it
printed and its exit code), or as a user runs it (a process of its own).

    ran = plane_cli(home, "send", "demo", "hi")           # a plane served elsewhere
    ran = await plane_cli_async(home, "status")           # a plane on this test's own loop
    done = plane_process(home, "status")                  # the real entry point, a Python start

A process costs a Python start and the imports (0.3-0.4 CPU-seconds each) on
cores the other tests share; in this process the command costs what it does.
So the wording and exit codes of every command are tested in this process,
and each command has one test of its own process (`tests/plane/cli/test_smoke.py`).

In this process, what the command reads and changes of the process is its own
for its run and put back after: `PLANE_HOME` and the rest of the environment
given, the working directory, stdin, stdout and stderr, the logging a
`plane serve` sets up, the plane it was aimed at (`--tcp`, kept for the
process's life: the next command would otherwise go there), and the garbage
collector (`plane compress` turns it off: its process ends after one call). One command runs
at a time (a lock).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import io
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from plane.cli import connect
from plane.entry import main

_ONE_AT_A_TIME = threading.Lock()


@dataclass(frozen=True)
class Ran:
    """What one command did: its exit code and what it printed."""

    returncode: int
    stdout: str
    stderr: str
    stdout_bytes: bytes = b""
    """What it printed, byte for byte: `plane expand` gives back what it was
    given, which need not be UTF-8 (in `stdout`, those bytes are escaped)."""


def plane_cli(
    home: Path,
    *args: str,
    stdin: str | bytes = "",
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Ran:
    """`plane ARGS` with `PLANE_HOME=home`, run by its `main` in this process."""
    assert not _loop_running(), "a plane on this thread's loop would wait on it: plane_cli_async"
    given = _Stream(stdin if isinstance(stdin, bytes) else stdin.encode())
    out, err = _Stream(), _Stream()
    # COLUMNS: what a process whose stdout is a pipe gets (argparse wraps help to it).
    values = {"PLANE_HOME": str(home), "COLUMNS": "80", **(env or {})}
    with _ONE_AT_A_TIME, _environment(values):
        with _directory(cwd), _logging_kept(), _signals_kept(), _aim_kept(), _gc_kept():
            with _streams(given, out, err):
                try:
                    code = main(list(args))
                except SystemExit as exit_:  # argparse's refusals and --help
                    code = _exit_code(exit_)
    return Ran(code, out.text(), err.text(), out.raw())


async def plane_cli_async(
    home: Path,
    *args: str,
    stdin: str | bytes = "",
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Ran:
    """`plane_cli` from a test whose plane runs on this thread's event loop:
    the command runs its own loop (`asyncio.run`) on another thread."""
    return await asyncio.to_thread(plane_cli, home, *args, stdin=stdin, cwd=cwd, env=env)


def plane_serve_until_it_answers(
    home: Path, *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> Ran:
    """`plane serve ARGS` in this process, stopped as `kill` stops it (SIGTERM)
    once it answers on `home`'s socket; on the main thread, where the plane
    can take its signals."""
    assert threading.current_thread() is threading.main_thread()

    def stop_once_it_answers() -> None:
        from tests.support.answering import answers

        while not answers(home):
            if served.is_set():
                return
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)

    served = threading.Event()
    stopper = threading.Thread(target=stop_once_it_answers, daemon=True)
    stopper.start()
    try:
        return plane_cli(home, "serve", *args, cwd=cwd, env=env)
    finally:
        served.set()
        stopper.join()


def plane_process(
    home: Path,
    *args: str,
    stdin: str = "",
    timeout: float = 60,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`plane ARGS` as a user runs it: the real entry point, in its own process."""
    return subprocess.run(
        [sys.executable, "-m", "plane", *args],
        env=process_environment(PLANE_HOME=str(home), **(env or {})),
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def process_environment(**values: str) -> dict[str, str]:
    """This process's environment with `values` over it, for a process of
    the test's that may start in another directory: its PYTHONPATH made
    absolute (from here), so that process imports the plane under test, as
    this one does, and not what a relative entry (`PYTHONPATH=.`) names
    where it stands."""
    environment = {**os.environ, **values}
    if given := environment.get("PYTHONPATH"):
        # An empty entry is the directory too, as Python reads it.
        absolute = (str(Path(entry).resolve()) for entry in given.split(os.pathsep))
        environment["PYTHONPATH"] = os.pathsep.join(absolute)
    return environment


def one_line(ran: Ran | subprocess.CompletedProcess[str]) -> str:
    """The one line a failing command printed, checked to be just that."""
    lines = ran.stderr.splitlines()
    assert len(lines) == 1, ran.stderr
    assert "Traceback" not in ran.stderr and "Error:" not in ran.stderr.split(":", 1)[0]
    return lines[0]


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _exit_code(exit_: SystemExit) -> int:
    if exit_.code is None:
        return 0
    return exit_.code if isinstance(exit_.code, int) else 1


class _Stream(io.TextIOWrapper):
    """A stream as the process's own is: text over bytes (`.buffer`), no file
    descriptor (so no terminal and no pipe to ask about)."""

    def __init__(self, given: bytes = b"") -> None:
        super().__init__(io.BytesIO(given), encoding="utf-8", errors="backslashreplace")

    def close(self) -> None:
        """The command may close what it was given; what it wrote is still read."""
        self.flush()

    def text(self) -> str:
        return self.raw().decode("utf-8", "surrogateescape")

    def raw(self) -> bytes:
        self.flush()
        raw = self.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue()


@contextlib.contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _directory(cwd: Path | None) -> Iterator[None]:
    if cwd is None:
        yield
        return
    before = os.getcwd()
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def _streams(stdin: _Stream, stdout: _Stream, stderr: _Stream) -> Iterator[None]:
    before = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = before


@contextlib.contextmanager
def _signals_kept() -> Iterator[None]:
    """A plane's loop takes SIGINT and SIGTERM while it serves, and leaves
    them at their defaults after: the test process's own are put back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def _gc_kept() -> Iterator[None]:
    enabled = gc.isenabled()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def _aim_kept() -> Iterator[None]:
    before = connect.remote()
    try:
        yield
    finally:
        connect.aim(before)


@contextlib.contextmanager
def _logging_kept() -> Iterator[None]:
    """`plane serve` sets up the root logger (its file, stderr): put back after."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {name: logging.getLogger(name).level for name in ("httpx", "plane")}
    try:
        yield
    finally:
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)
        for name, was in levels.items():
            logging.getLogger(name).setLevel(was)
