"""`python -m tui [--socket PATH | --tcp HOST:PORT [--token T]]`.

What `plane` with no argument execs once a plane is running. The default
socket is the one `plane` itself listens on: `$PLANE_HOME/plane.sock`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from plane.home import Home
from plane.wire.words import NEEDS_A_TERMINAL
from tui.app import PlaneApp
from tui.link import Address


def parse(argv: list[str] | None = None) -> Address:
    parser = argparse.ArgumentParser(
        prog="python -m tui",
        description="The plane's terminal client: agents, spend, conversations.",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--socket", type=Path, help="the plane's Unix socket")
    where.add_argument("--tcp", metavar="HOST:PORT", help="the plane's TCP address")
    parser.add_argument("--token", help="token for TCP (default: $PLANE_TOKEN)")
    args = parser.parse_args(argv)
    if args.tcp:
        token = args.token or os.environ.get("PLANE_TOKEN")
        if not token:
            parser.error("--tcp needs a token: --token or $PLANE_TOKEN")
        host, _, port = args.tcp.rpartition(":")
        if not host or not port.isdigit():
            parser.error(f"--tcp wants HOST:PORT, like 127.0.0.1:7878, not {args.tcp!r}")
        return Address.tcp(args.tcp, token)
    return Address(path=args.socket or Home.from_env().socket)


def main(argv: list[str] | None = None) -> None:
    address = parse(argv)
    if not on_a_terminal():
        raise SystemExit(f"python -m tui: {NEEDS_A_TERMINAL}")
    PlaneApp(address).run()
    print(farewell(address))


def on_a_terminal() -> bool:
    """Whether the TUI has a terminal to draw on and read keys from. Without
    one (input at its end) it would read nothing at full speed, a core for as
    long as it lived. Under another driver (textual-serve's, for `plane web`)
    the pipes are the driver's, not a terminal."""
    if os.environ.get("TEXTUAL_DRIVER"):
        return True
    return sys.stdin.isatty() and sys.stdout.isatty()


def farewell(address: Address) -> str:
    """The one line left on the terminal: closing the TUI stops nothing."""
    if address.port is not None:
        where = f"{address.host}:{address.port}"
        return f"The plane at {where} keeps running; `plane --tcp {where} stop` stops it."
    return "The plane keeps running (its agents go on without the TUI); `plane stop` stops it."


if __name__ == "__main__":
    main()
