"""`plane web [--host --port --tabs]`: the same TUI in a browser, through
textual-serve, behind sessions of its own (`plane.cli.web_server` says how).

textual-serve runs `python -m tui` once per browser tab and relays its
terminal over a websocket. `plane web` prints the address to open, with a
token made for this run only (never the plane's own); the browser trades it
for a session, and stopping `plane web` ends every session. Loopback by
default, as the rest; `--port 0` picks a free port and prints it.

The plane is started in the background when none runs, as `plane` does,
and `plane web` says so (`STARTED`): its own line says the plane keeps
running after it, which is news to whoever did not know it started one.
"""

from __future__ import annotations

import argparse
import shlex
import socket
import sys
from typing import Any

from plane.cli import arguments as arg
from plane.cli.daemon import _answers, _start_daemon, open_home

DEFAULT_PORT = 7879
DEFAULT_TABS = 8
STARTED = "No plane was running: started one in the background (`plane stop` stops it)."


def add_commands(sub: Any) -> None:
    web_parser = sub.add_parser(
        "web", help="the TUI in a browser (textual-serve), behind a session of its own"
    )
    web_parser.add_argument(
        "--host", default="127.0.0.1", type=arg.text("host"), help="default 127.0.0.1"
    )
    web_parser.add_argument(
        "--port",
        default=DEFAULT_PORT,
        type=port,
        help=f"default {DEFAULT_PORT}; 0 picks a free one",
    )
    web_parser.add_argument(
        "--tabs",
        default=DEFAULT_TABS,
        type=tabs,
        help=f"TUIs running at once, one a tab (default {DEFAULT_TABS})",
    )
    web_parser.set_defaults(func=serve_web)


def port(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(
            f"wants a port from 0 to 65535 (0 picks a free one), not {text!r}"
        )
    return int(text)


def tabs(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 1000:
        raise argparse.ArgumentTypeError(f"wants a number of tabs from 1 to 1000, not {text!r}")
    return int(text)


def serve_web(args: argparse.Namespace) -> int:
    import asyncio

    home = open_home()
    if not asyncio.run(_answers(home)):
        _start_daemon(home)
        print(STARTED, flush=True)
    command = shlex.join([sys.executable, "-P", "-m", "tui", "--socket", str(home.socket)])
    asyncio.run(_serve(command, args.host, args.port, args.tabs))
    return 0


async def _serve(command: str, host: str, port: int, tabs: int) -> None:
    import asyncio
    import secrets
    import signal

    from plane.cli.web_server import WebServer  # textual-serve: only when serving

    token = secrets.token_urlsafe(32)
    title = f"plane — {socket.gethostname()}"
    server = WebServer(command, token, tabs=tabs, title=title, host=host, port=port)
    runner = await server.listen()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    print(f"The TUI in a browser: {server.public_url}/?token={token}", flush=True)
    print("(ctrl+c stops serving it and ends its sessions; the plane keeps running)", flush=True)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
