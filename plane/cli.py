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
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

from plane import protocol as p
from plane.client import PlaneClient
from plane.clock import until
from plane.config import load_config
from plane.economy.compress.cli import add_commands as add_compression_commands
from plane.errors import NotRunning, PlaneError
from plane.home import Home, PlaneState, user_config_path
from plane.money import plain, usd, usd_exact

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
"""How long `plane stop` waits: turns in flight get 10 s, then the rest closes."""
STOP_POLL_S = 0.05


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except PlaneError as exc:
        print(f"plane: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
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
        help="also listen on TCP; clients need the token in $PLANE_HOME/token",
    )
    serve.set_defaults(func=_serve)

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
    send.add_argument("agent")
    send.add_argument("text")
    send.add_argument("--wait", action="store_true", help="wait for the agent's answer")
    send.add_argument("--timeout", type=float, default=600, help="seconds --wait waits")
    send.set_defaults(func=_send)

    ledger = sub.add_parser("ledger", help="every LLM call of a day, with tokens and cost")
    ledger.add_argument("--day", type=date.fromisoformat, help="YYYY-MM-DD (default: today, UTC)")
    form = ledger.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true")
    form.add_argument("--csv", action="store_true")
    ledger.set_defaults(func=_ledger)

    new = sub.add_parser("new", help="create an agent (it gets the defaults, ceiling included)")
    new.add_argument("name")
    new.add_argument("--model", required=True)
    new.add_argument("--role", default="", help="the role / system prompt")
    new.set_defaults(func=_new)

    add_compression_commands(sub)
    return top


# ── the daemon ─────────────────────────────────────────────────────────────


def _serve(args: argparse.Namespace) -> int:
    from plane.server import Plane

    home = Home.from_env().ensure()
    config = load_config(_config_path(args.config))
    _log_to(home)
    tcp = _host_port(args.tcp) if args.tcp else None
    plane = Plane(config, home, tcp=tcp)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, plane.stop_event.set)
        await plane.serve()

    asyncio.run(run())
    return 0


def _config_path(given: Path | None) -> Path | None:
    if given is not None:
        return given
    for candidate in (Path("agents.yaml"), user_config_path()):
        if candidate.is_file():
            return candidate
    return None


def _host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise PlaneError(f"--tcp wants HOST:PORT, like 127.0.0.1:7878, not {text!r}.")
    return host, int(port)


def _log_to(home: Home) -> None:
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=[logging.StreamHandler(), logging.FileHandler(home.log)],
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)


def _tui(args: argparse.Namespace) -> int:
    home = Home.from_env().ensure()
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


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"wants a number of seconds over 0, not {text!r}")
    return value


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
            return await asyncio.wait_for(_answer(client, args.agent), args.timeout)
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
