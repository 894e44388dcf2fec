"""The daemon's commands: `plane serve`, `plane stop`, `plane` alone (the
TUI, starting a plane in the background when none answers), and the
gateway's keys and client lines."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import logging.handlers
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from plane.cli.connect import NotAnswering, connect, remote
from plane.errors import NotRunning, PlaneError
from plane.home import Home, user_config_path
from plane.wire import protocol as p
from plane.wire.client import PlaneClient
from plane.wire.token import read_token
from plane.wire.words import NEEDS_A_TERMINAL

if TYPE_CHECKING:
    from plane.config import Config

log = logging.getLogger("plane")

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
"""How long `plane stop` waits: turns in flight get 10 s, then the rest closes."""
STOP_POLL_S = 0.05


def load_config(path: Path | None, looked: list[Path]) -> Config:
    """agents.yaml, read: its models cost a CLI call ~0.2 s to build, so only
    the commands that read it load them (`plane status` does not)."""
    from plane.config import load_config as load

    return load(path, looked)


def serve(args: argparse.Namespace) -> int:
    path, looked = config_path(args.config)
    config = load_config(path, looked)  # before anything is made: a bad file leaves nothing behind
    from plane.daemon.server import Plane

    home = open_home()
    _log_to(home)
    if path is not None:
        log.info("config from %s", path.resolve())
    else:
        log.info(
            "no config in %s; running on the built-in defaults (the embedded model, no ceiling)",
            " or ".join(str(p.absolute()) for p in looked),
        )
    plane = Plane(config, home, tcp=args.tcp, http=args.http)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, plane.signalled)
        await plane.serve()

    from plane.daemon.loop import loop_factory

    with asyncio.Runner(loop_factory=loop_factory()) as runner:  # the operator's requests first
        runner.run(run())
    log.info("stopped")
    return 0


def key(args: argparse.Namespace) -> int:
    from plane.gateway.client_env import make_key

    path, looked = config_path(args.config)
    with _where_looked(path, looked):
        print(make_key(load_config(path, looked), open_home(), args.agent))
    return 0


def gateway_env(args: argparse.Namespace) -> int:
    from plane.gateway.client_env import env_lines

    path, looked = config_path(args.config)
    with _where_looked(path, looked):
        config = load_config(path, looked)
        lines = env_lines(config, open_home(), args.agent, args.client, args.http, args.tag)
        print("\n".join(lines))
    return 0


@contextlib.contextmanager
def _where_looked(path: Path | None, looked: list[Path]) -> Iterator[None]:
    """A refusal made on the built-in defaults says that no file was found, and where
    it was looked for: "not in agents.yaml" is a puzzle when there is no agents.yaml."""
    try:
        yield
    except PlaneError as exc:
        if path is not None:
            raise
        places = " or ".join(str(p.absolute()) for p in looked)
        raise PlaneError(f"{exc} (No agents.yaml was found: looked in {places}.)") from None


def config_path(given: Path | None) -> tuple[Path | None, list[Path]]:
    """The config to read, and where it was looked for."""
    if given is not None:
        return given, [given]
    looked = [Path("agents.yaml"), user_config_path()]
    for candidate in looked:
        if candidate.is_file():
            return candidate, looked
    return None, looked


def open_home() -> Home:
    home = Home.from_env()
    try:
        return home.ensure()
    except OSError as exc:
        raise PlaneError(
            f"Cannot use {home.root} as the plane's home ({exc.strerror}); set PLANE_HOME "
            "to a directory this user can write."
        ) from None


LOG_BYTES = 10 << 20
"""plane.log is rotated once it would pass this size."""
LOG_KEPT = 3
"""The rotated logs kept beside it (plane.log.1, the newest, to plane.log.3):
at most 40 MiB of log in all, however long the plane runs."""


def _log_to(home: Home) -> None:
    """The log file, with times; and stderr, where each line starts `plane:`,
    unless stderr is the log file already (a plane started in the background)."""
    background = _is_file(sys.stderr, home.log)
    try:
        file = PlaneLog(home.log)
    except OSError as exc:
        raise PlaneError(f"Cannot write {home.log} ({exc.strerror}).") from None
    file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handlers: list[logging.Handler] = [file]
    if not background:
        console = logging.StreamHandler()
        console.setFormatter(logging.Formatter("plane: %(message)s"))
        handlers.append(console)
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True)
    logging.getLogger("httpx").setLevel(logging.WARNING)


class PlaneLog(logging.handlers.RotatingFileHandler):
    """plane.log, rotated by the plane itself past `LOG_BYTES`, `LOG_KEPT`
    old ones kept: a plane runs for months, and a client that leaves every
    call or a turn failing every hour writes a line (a traceback) each time.

    Rotated here rather than left to logrotate (`WatchedFileHandler`): the
    plane is started by hand or by `plane`, on machines where nobody writes
    it a logrotate rule, and the bound must hold without one. A plane in the
    background has its stdout and stderr on plane.log too (what Python
    itself prints there: a warning, a crash's traceback); they follow each
    rotation to the new plane.log, never left writing to a rotated file that
    is later deleted. The new plane.log is made 0600, as the home's files
    are (`plane.home`)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, maxBytes=LOG_BYTES, backupCount=LOG_KEPT)
        self.rotator = _rotated

    def doRollover(self) -> None:
        log = Path(self.baseFilename)
        following = [stream for stream in (sys.stdout, sys.stderr) if _is_file(stream, log)]
        super().doRollover()
        if self.stream is None:
            return
        for stream in following:
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
                os.dup2(self.stream.fileno(), stream.fileno())


def _rotated(source: str, dest: str) -> None:
    """plane.log moved aside, and the new one made private before it is opened."""
    if os.path.lexists(source):
        os.replace(source, dest)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    os.close(os.open(source, flags, 0o600))


def _is_file(stream: IO[str], path: Path) -> bool:
    try:
        mine, theirs = os.fstat(stream.fileno()), os.stat(path)
    except (OSError, ValueError):
        return False
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)


def tui(args: argparse.Namespace) -> int:
    aimed = remote()
    if aimed is not None:  # a plane elsewhere: nothing to start here
        host, port = aimed.tcp
        token = aimed.token or read_token(Home.from_env().token)
        if not token:
            raise PlaneError("--tcp needs the plane's token: --token T or $PLANE_TOKEN.")
        # The token goes in the environment, not the command line (which any
        # process on the machine can read).
        environment = {**os.environ, "PLANE_TOKEN": token}
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        _needs_a_terminal()
        os.execve(sys.executable, [sys.executable, "-P", "-m", "tui", "--tcp", where], environment)
    home = open_home()
    if not asyncio.run(_answers(home)):
        _start_daemon(home)
    _needs_a_terminal("The plane is running; ")
    # Does not return: the TUI replaces this process. -P: a `tui` (or `plane`)
    # directory where the operator stands is not what runs.
    os.execv(sys.executable, [sys.executable, "-P", "-m", "tui", "--socket", str(home.socket)])


def _needs_a_terminal(done: str = "") -> None:
    """The TUI draws on a terminal and reads its keys. Without one (`plane`
    from a script, cron or `nohup`, its input at its end) it would draw into
    the void and read nothing at full speed, a core for as long as it lives."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        said = NEEDS_A_TERMINAL if done else NEEDS_A_TERMINAL[0].upper() + NEEDS_A_TERMINAL[1:]
        raise PlaneError(done + said)


def _start_daemon(home: Home) -> None:
    """Start `plane serve` in the background; return once it answers. A plane
    that exits instead (a bad agents.yaml, say) is reported in its own words."""
    start = home.log.stat().st_size if home.log.exists() else 0
    with open(home.log, "ab") as log:
        daemon = subprocess.Popen(
            [sys.executable, "-P", "-m", "plane", "serve"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if asyncio.run(_answers(home)):
            return
        if daemon.poll() is not None:
            said = _since(home.log, start).decode(errors="replace").strip().splitlines()
            last = said[-1].removeprefix("plane: ") if said else f"see {home.log}"
            raise PlaneError(f"The plane did not start: {last}")
        time.sleep(0.2)
    raise PlaneError(f"The plane did not start within {START_TIMEOUT_S:.0f}s; see {home.log}.")


def _since(log: Path, start: int) -> bytes:
    """What a starting plane wrote to its log: from `start` on, or the whole
    new plane.log if it rotated the log meanwhile (it is shorter than `start`)."""
    written = log.read_bytes()
    return written[start:] if len(written) >= start else written


async def _answers(home: Home) -> bool:
    try:
        client = await PlaneClient.connect(home.socket)
    except (NotRunning, OSError):
        return False
    await client.close()
    return True


# ── clients ────────────────────────────────────────────────────────────────


def stop(args: argparse.Namespace) -> int:
    """Tell the plane to stop, then wait until it has let go of its home
    (its socket is removed before its lock is released): `plane stop &&
    plane serve` starts the next one."""
    home = Home.from_env()
    try:
        asyncio.run(_tell_stop(home))
    except NotRunning as exc:  # "start one" is no answer to a stop
        raise PlaneError(f"No plane is running at {exc.where}: nothing to stop.") from None
    except NotAnswering as exc:
        if exc.state != "stopping":  # already stopping: wait for it all the same
            raise
    if args.no_wait or remote() is not None:  # a plane elsewhere: its home is not here to watch
        print("The plane is stopping.")
        return 0
    timeout = STOP_TIMEOUT_S if args.timeout is None else args.timeout
    deadline = time.monotonic() + timeout
    while home.state() != "none":
        if time.monotonic() > deadline:
            raise PlaneError(
                f"The plane is still stopping after {timeout:g}s (turns in flight "
                f"finish first); `plane status` says when it has, {home.log} says why."
            )
        time.sleep(STOP_POLL_S)
    print("The plane has stopped.")
    return 0


async def _tell_stop(home: Home) -> None:
    client = await connect(home)
    try:
        with contextlib.suppress(NotRunning):  # it may hang up before its `ok`: told all the same
            await client.request(p.Stop())
    finally:
        await client.close()
