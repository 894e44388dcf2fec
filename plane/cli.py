"""The `plane` command: argparse → load_config → Plane(config).serve(), and
small clients of a running plane for scripts and people.

`plane` alone opens the TUI, starting the daemon in the background when
none runs. The TUI is its own program (`python -m tui`): the daemon's
package never imports it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import json
import logging
import math
import os
import select
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from plane.clock import until
from plane.config import load_config
from plane.economy.compress.cli import add_commands as add_compression_commands
from plane.errors import NotRunning, PlaneError
from plane.home import Home, PlaneState, user_config_path
from plane.usage import OneLineParser
from plane.wire import protocol as p
from plane.wire.client import PlaneClient
from plane.wire.words import plain, usd, usd_exact

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
"""How long `plane stop` waits: turns in flight get 10 s, then the rest closes."""
STOP_POLL_S = 0.05
MAX_WAIT_S = 7 * 24 * 3600.0

log = logging.getLogger("plane")

EXIT_FAILED = 1
"""The plane (or this command) refused or could not do it; stderr says why."""
EXIT_NO_ANSWER = 124
"""`send --wait` gave up waiting (as timeout(1) does)."""
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
"""What a shell reports for a writer whose reader went away (`| head`)."""


class NoAnswer(PlaneError):
    """`send --wait` waited its whole timeout."""


def main(argv: list[str] | None = None) -> int:
    """Run one command. Whatever goes wrong is one line on stderr and an exit
    code (see `_failed`), never a traceback."""
    try:
        args = parser().parse_args(argv)
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # here, where a closed pipe is still ours to answer
        return code
    except SystemExit:
        raise
    except BaseException as exc:
        return _failed(exc)


def _failed(exc: BaseException) -> int:
    """The one place an exception becomes a line on stderr and an exit code."""
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, BrokenPipeError) and _stdout_closed():
        # The reader (`head`, a pager) has what it wanted: nothing to say, and
        # nothing more may be flushed into the closed pipe at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    code = EXIT_NO_ANSWER if isinstance(exc, NoAnswer) else EXIT_FAILED
    _say(_sentence(exc))
    return code


def _sentence(exc: BaseException) -> str:
    if isinstance(exc, PlaneError):
        return str(exc)
    if isinstance(exc, ValidationError):  # a request this command could not even build
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        return f"{where + ': ' if where else ''}{error['msg']}."
    if isinstance(exc, ConnectionError | EOFError | asyncio.IncompleteReadError):
        return "The plane closed the connection without answering (is it stopping?)."
    if isinstance(exc, p.BadFrame):
        return (
            f"Cannot read the plane's answer ({str(exc).rstrip('.')}); are this command and "
            "the plane the same version?"
        )
    if isinstance(exc, OSError):
        reason = exc.strerror or str(exc) or type(exc).__name__
        if "AF_UNIX path too long" in reason:
            return (
                f"The socket path {Home.from_env().socket} is too long (Unix allows 107 "
                "bytes); set PLANE_HOME to a shorter directory."
            )
        return f"{reason}: {exc.filename}." if exc.filename else f"{reason}."
    what = f"{type(exc).__name__}: {str(exc).rstrip('.')}"
    return f"Unexpected {what}. This is a bug in plane{_keep_traceback(exc)}."


def _say(line: str) -> None:
    with contextlib.suppress(OSError):
        print(f"plane: {' '.join(line.split())}", file=sys.stderr, flush=True)


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def _keep_traceback(exc: BaseException) -> str:
    """Write the traceback to the plane's log, for a bug report; say where."""
    try:
        path = Home.from_env().log
        if not path.parent.is_dir():
            return ""
        with open(path, "a", encoding="utf-8", errors="replace") as file:
            traceback.print_exception(exc, file=file)
    except Exception:
        return ""
    return f"; the traceback is in {path}"


# ── argument types: a bad value is refused by argparse, in one line ───────


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_WAIT_S):
        raise argparse.ArgumentTypeError(
            f"wants a number of seconds over 0 (at most {MAX_WAIT_S:.0f}), not {text!r}"
        )
    return value


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a day like 2026-11-29") from None


def _text(what: str, *, blank: bool = False) -> Callable[[str], str]:
    """Text for the plane: UTF-8 (a terminal's undecodable bytes are not), and
    not empty unless `blank`."""

    def check(text: str) -> str:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise argparse.ArgumentTypeError(f"the {what} is not valid UTF-8") from None
        if not blank and not text.strip():
            raise argparse.ArgumentTypeError(f"the {what} is empty")
        return text

    check.__name__ = what  # argparse names the type in some messages
    return check


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")  # [::1]:7878
    if not host or not (port.isascii() and port.isdigit()) or int(port) > 65535:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not HOST:PORT, like 127.0.0.1:7878 (port 0 picks a free one)"
        )
    return host, int(port)


def parser() -> argparse.ArgumentParser:
    top = OneLineParser(
        prog="plane",
        description="A control plane for always-on LLM agents, with a daily spend ceiling "
        "per agent. With no command, opens the TUI (starting the plane if none runs).",
    )
    top.set_defaults(func=_tui)
    sub = top.add_subparsers(title="commands", metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the plane in the foreground")
    serve.add_argument(
        "--config",
        type=Path,
        help=f"agents.yaml (default: ./agents.yaml, else {user_config_path()})",
    )
    serve.add_argument(
        "--tcp",
        metavar="HOST:PORT",
        type=_address,
        help="also listen on TCP (port 0: a free one, said at start); clients need the "
        "token in $PLANE_HOME/token",
    )
    serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=_address,
        help="also serve the gateway's HTTP APIs (Anthropic Messages, OpenAI Chat "
        "Completions) for gateway agents' clients; port 0 picks a free one",
    )
    serve.set_defaults(func=_serve)

    key = sub.add_parser("key", help="make a new key for a gateway agent (the old one stops)")
    key.add_argument("agent", type=_text("agent name"))
    key.add_argument("--config", type=Path, help="agents.yaml (as for serve)")
    key.set_defaults(func=_key)

    gateway = sub.add_parser("gateway", help="point Claude Code, Codex or Aider at the plane")
    gateway_sub = gateway.add_subparsers(title="commands", metavar="COMMAND", required=True)
    env = gateway_sub.add_parser("env", help="the lines that point a client at a gateway agent")
    env.add_argument("agent", type=_text("agent name"))
    env.add_argument("--client", required=True, choices=["claude-code", "codex", "aider"])
    env.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=_address,
        default=("127.0.0.1", 7878),
        help="where `plane serve --http` listens (default 127.0.0.1:7878)",
    )
    env.add_argument("--config", type=Path, help="agents.yaml (as for serve)")
    env.set_defaults(func=_gateway_env)

    stop = sub.add_parser("stop", help="stop the running plane; returns once it has stopped")
    stop.add_argument(
        "--no-wait", action="store_true", help="return once the plane has been told to stop"
    )
    stop.add_argument(
        "--timeout",
        type=_seconds,
        default=STOP_TIMEOUT_S,
        help=f"seconds to wait for it to stop (default {STOP_TIMEOUT_S:.0f})",
    )
    stop.set_defaults(func=_stop)

    status = sub.add_parser("status", help="the day, and each agent's spend and ceiling")
    status.add_argument("--json", action="store_true", help="machine-readable")
    status.set_defaults(func=_status)

    send = sub.add_parser("send", help="post a message (or /limit …) to an agent as the operator")
    send.add_argument("agent", type=_text("agent name"))
    send.add_argument("text", type=_text("text"))
    send.add_argument("--wait", action="store_true", help="wait for the agent's answer")
    send.add_argument(
        "--timeout", type=_seconds, default=600, help="seconds --wait waits (default: 600)"
    )
    send.set_defaults(func=_send)

    ledger = sub.add_parser("ledger", help="every LLM call of a day, with tokens and cost")
    ledger.add_argument("--day", type=_day, help="YYYY-MM-DD (default: today, UTC)")
    form = ledger.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true")
    form.add_argument("--csv", action="store_true")
    ledger.set_defaults(func=_ledger)

    new = sub.add_parser("new", help="create an agent (it gets the defaults, ceiling included)")
    new.add_argument("name", type=_text("name"))
    new.add_argument("--model", required=True, type=_text("model"))
    new.add_argument(
        "--role", default="", type=_text("role", blank=True), help="the role / system prompt"
    )
    new.set_defaults(func=_new)

    add_compression_commands(sub)
    return top


# ── the daemon ─────────────────────────────────────────────────────────────


def _serve(args: argparse.Namespace) -> int:
    path, looked = _config_path(args.config)
    config = load_config(path)  # before anything is made: a bad file leaves nothing behind
    from plane.daemon.server import Plane

    home = _home()
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
            loop.add_signal_handler(sig, plane.stop_event.set)
        await plane.serve()

    asyncio.run(run())
    log.info("stopped")
    return 0


def _key(args: argparse.Namespace) -> int:
    from plane.gateway.cli import make_key

    print(make_key(load_config(_config_path(args.config)[0]), _home(), args.agent))
    return 0


def _gateway_env(args: argparse.Namespace) -> int:
    from plane.gateway.cli import env_lines

    config = load_config(_config_path(args.config)[0])
    print("\n".join(env_lines(config, _home(), args.agent, args.client, args.http)))
    return 0


def _config_path(given: Path | None) -> tuple[Path | None, list[Path]]:
    """The config to read, and where it was looked for."""
    if given is not None:
        return given, [given]
    looked = [Path("agents.yaml"), user_config_path()]
    for candidate in looked:
        if candidate.is_file():
            return candidate, looked
    return None, looked


def _home() -> Home:
    home = Home.from_env()
    try:
        return home.ensure()
    except OSError as exc:
        raise PlaneError(
            f"Cannot use {home.root} as the plane's home ({exc.strerror}); set PLANE_HOME "
            "to a directory this user can write."
        ) from None


def _log_to(home: Home) -> None:
    """The log file, with times; and stderr, where each line starts `plane:`,
    unless stderr is the log file already (a plane started in the background)."""
    try:
        file = logging.FileHandler(home.log)
    except OSError as exc:
        raise PlaneError(f"Cannot write {home.log} ({exc.strerror}).") from None
    file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handlers: list[logging.Handler] = [file]
    if not _is_file(sys.stderr, home.log):
        console = logging.StreamHandler()
        console.setFormatter(logging.Formatter("plane: %(message)s"))
        handlers.append(console)
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True)
    logging.getLogger("httpx").setLevel(logging.WARNING)


def _is_file(stream: IO[str], path: Path) -> bool:
    try:
        mine, theirs = os.fstat(stream.fileno()), os.stat(path)
    except (OSError, ValueError):
        return False
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)


def _tui(args: argparse.Namespace) -> int:
    home = _home()
    if not asyncio.run(_answers(home)):
        _start_daemon(home)
    # Does not return: the TUI replaces this process.
    os.execv(sys.executable, [sys.executable, "-m", "tui", "--socket", str(home.socket)])


def _start_daemon(home: Home) -> None:
    """Start `plane serve` in the background; return once it answers. A plane
    that exits instead (a bad agents.yaml, say) is reported in its own words."""
    start = home.log.stat().st_size if home.log.exists() else 0
    with open(home.log, "ab") as log:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "plane", "serve"],
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
            said = home.log.read_bytes()[start:].decode(errors="replace").strip().splitlines()
            last = said[-1].removeprefix("plane: ") if said else f"see {home.log}"
            raise PlaneError(f"The plane did not start: {last}")
        time.sleep(0.2)
    raise PlaneError(f"The plane did not start within {START_TIMEOUT_S:.0f}s; see {home.log}.")


async def _answers(home: Home) -> bool:
    try:
        client = await PlaneClient.connect(home.socket)
    except (NotRunning, OSError):
        return False
    await client.close()
    return True


# ── clients ────────────────────────────────────────────────────────────────


def _client(work: Callable[[PlaneClient], Awaitable[int]]) -> int:
    async def run() -> int:
        client = await _connect(Home.from_env())
        try:
            return await work(client)
        finally:
            await client.close()

    return asyncio.run(run())


async def _connect(home: Home) -> PlaneClient:
    """A client of the plane in `home`; when none answers, what its lock
    says: no plane, or one starting or stopping (its socket closed)."""
    try:
        return await PlaneClient.connect(home.socket)
    except NotRunning:
        state = home.state()
        if state == "none":
            raise
        raise NotAnswering(home, state) from None


class NotAnswering(PlaneError):
    def __init__(self, home: Home, state: PlaneState) -> None:
        said = {
            "starting": "is starting; try again in a moment",
            "stopping": "is stopping",
            "running": f"holds its lock but does not answer on {home.socket}",
        }
        super().__init__(f"The plane in {home.root} {said.get(state, state)}.")
        self.state = state


def _stop(args: argparse.Namespace) -> int:
    """Tell the plane to stop, then wait until it has let go of its home
    (its socket is removed before its lock is released): `plane stop &&
    plane serve` starts the next one."""
    home = Home.from_env()
    try:
        asyncio.run(_tell_stop(home))
    except NotAnswering as exc:
        if exc.state != "stopping":  # already stopping: wait for it all the same
            raise
    if args.no_wait:
        print("The plane is stopping.")
        return 0
    deadline = time.monotonic() + args.timeout
    while home.state() != "none":
        if time.monotonic() > deadline:
            raise PlaneError(
                f"The plane is still stopping after {args.timeout:g}s (turns in flight "
                f"finish first); `plane status` says when it has, {home.log} says why."
            )
        time.sleep(STOP_POLL_S)
    print("The plane has stopped.")
    return 0


async def _tell_stop(home: Home) -> None:
    client = await _connect(home)
    try:
        with contextlib.suppress(NotRunning):  # it may hang up before its `ok`: told all the same
            await client.request(p.Stop)
    finally:
        await client.close()


def _status(args: argparse.Namespace) -> int:
    async def work(client: PlaneClient) -> int:
        reply = await client.request(p.Status)
        assert isinstance(reply, p.SnapshotReply)
        print(_status_json(reply.snapshot) if args.json else _status_text(reply.snapshot))
        return 0

    return _client(work)


def _status_json(snapshot: p.Snapshot) -> str:
    """What the TUI is told, for scripts: `default_model` and
    `default_limit_usd` are what `plane new` gives an agent; an agent's
    `resumes_at` is when a held one starts again on its own (null if it
    does not: not held, a zero ceiling, an unpriced model)."""
    return json.dumps(
        {
            "day": snapshot.day.isoformat(),
            "resets_at": snapshot.resets_at.isoformat(),
            "default_model": snapshot.default_model,
            "default_limit_usd": _plain(snapshot.default_limit_usd),
            "agents": [
                {
                    "name": a.name,
                    "model": a.model,
                    "state": a.status,
                    "spend_today_usd": plain(a.spend_today_usd),
                    "limit_usd": _plain(a.limit_usd),
                    "waiting": a.waiting,
                    "resumes_at": None if a.resumes_at is None else a.resumes_at.isoformat(),
                }
                for a in snapshot.agents
            ],
        },
        indent=2,
    )


def _plain(amount: Decimal | None) -> str | None:
    return None if amount is None else plain(amount)


def _status_text(snapshot: p.Snapshot) -> str:
    """One line an agent; a held one the day's end frees says when, as the
    TUI's title does (on the plane's clock, not this machine's)."""
    lines = [f"{snapshot.day} (UTC)"]
    width = max((len(a.name) for a in snapshot.agents), default=0)
    for a in snapshot.agents:
        ceiling = "no limit" if a.limit_usd is None else f"of {usd_exact(a.limit_usd)}"
        line = f"  {a.name:<{width}}  {a.status:<7}  {a.model}  {usd(a.spend_today_usd)} {ceiling}"
        if a.status == "held" and a.resumes_at is not None:
            line += f"  resumes in {until(snapshot.now, a.resumes_at)}"
        lines.append(line)
    return "\n".join(lines)


def _send(args: argparse.Namespace) -> int:
    async def work(client: PlaneClient) -> int:
        if args.wait:
            await client.request(p.Subscribe)
        reply = await client.request(p.Send, agent=args.agent, text=args.text)
        assert isinstance(reply, p.Sent)
        said = [m for m in reply.messages if m.kind != "operator"]
        for message in said:
            print(_line(message))
        if args.wait and not said:
            try:
                return await asyncio.wait_for(_answer(client, args.agent), args.timeout)
            except TimeoutError:
                raise NoAnswer(
                    f"No answer from {args.agent} within {args.timeout:g}s; its turn goes on "
                    "(`plane status` shows it)."
                ) from None
        return 0

    return _client(work)


async def _answer(client: PlaneClient, agent: str) -> int:
    """Print the agent's side until its turn finishes."""
    async for event in client.events():
        if isinstance(event, p.MessageAppended) and event.message.agent == agent:
            if event.message.kind != "operator":
                print(_line(event.message), flush=True)
        elif isinstance(event, p.TurnFinished) and event.agent == agent:
            return 0 if event.ok else 1
    raise NotRunning("the socket (the plane closed the connection)")


def _line(message: p.Message) -> str:
    prefix = {"ask": "‹ask› ", "tool": "· ", "cost": "  "}.get(message.kind, "")
    return prefix + message.text


def _ledger(args: argparse.Namespace) -> int:
    async def work(client: PlaneClient) -> int:
        reply = await client.request(p.LedgerQuery, day=args.day)
        assert isinstance(reply, p.Ledger)
        rows = [_entry_row(e) for e in reply.entries]
        if args.json:
            print(json.dumps({"day": reply.day.isoformat(), "calls": rows}, indent=2))
        elif args.csv:
            _write_csv(rows)
        else:
            _print_ledger(reply.day, reply.entries)
        return 0

    return _client(work)


def _entry_row(e: p.LedgerEntry) -> dict[str, Any]:
    return {
        "id": e.id,
        "agent": e.agent,
        "day": e.day.isoformat(),
        "at": e.at.isoformat(),
        "provider": e.provider,
        "model": e.model,
        **e.usage.model_dump(),
        "cost_usd": plain(e.cost_usd),
        "price_source": e.price_source,
        "status": e.status,
        "estimated": e.estimated,
    }


LEDGER_FIELDS = [
    "id",
    "agent",
    "day",
    "at",
    "provider",
    "model",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "cost_usd",
    "price_source",
    "status",
    "estimated",
]


def _write_csv(rows: list[dict[str, Any]]) -> None:
    writer = csv.DictWriter(sys.stdout, fieldnames=LEDGER_FIELDS)
    writer.writeheader()
    writer.writerows(rows)


def _print_ledger(day: date, entries: list[p.LedgerEntry]) -> None:
    total = sum((e.cost_usd for e in entries), Decimal(0))
    print(f"{day} (UTC): {len(entries)} calls, {usd(total)}")
    for e in entries:
        u = e.usage
        tokens = f"in {u.input_tokens} (cached {u.cache_read_tokens})  out {u.output_tokens}"
        cost = f"${plain(e.cost_usd)}"
        print(f"  {e.at:%H:%M:%S}  {e.agent}  {e.model}  {tokens}  {cost}  {e.status}")


def _new(args: argparse.Namespace) -> int:
    async def work(client: PlaneClient) -> int:
        reply = await client.request(p.NewAgent, name=args.name, model=args.model, role=args.role)
        assert isinstance(reply, p.AgentCreated)
        a = reply.agent
        ceiling = "no limit" if a.limit_usd is None else f"{usd_exact(a.limit_usd)} a day"
        print(f"Created {a.name} on {a.model}, {ceiling}.")
        return 0

    return _client(work)
