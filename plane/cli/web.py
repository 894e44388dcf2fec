"""`plane web [--host --port]`: the same TUI in a browser, through
textual-serve, behind the plane's token.

textual-serve runs `python -m tui` once per browser tab and relays its
terminal over a websocket; it has no authentication of its own, so every
request here (the page, its scripts, the websocket) must carry the plane's
token: in the address `plane web` prints (`?token=…`), once, after which the
page keeps it in a cookie (HttpOnly, SameSite=Strict, so no other site's page
can open the websocket with it) and drops it from the address bar. Anything
else gets a 401 and never reaches a TUI. Loopback by default, as the rest.

The plane is started in the background when none runs, as `plane` does.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from plane.cli import arguments as arg
from plane.cli.daemon import _answers, _start_daemon, open_home
from plane.errors import PlaneError
from plane.home import read_token

DEFAULT_PORT = 7879


def add_commands(sub: Any) -> None:
    web_parser = sub.add_parser(
        "web", help="the TUI in a browser (textual-serve), behind the plane's token"
    )
    web_parser.add_argument(
        "--host", default="127.0.0.1", type=arg.text("host"), help="default 127.0.0.1"
    )
    web_parser.add_argument(
        "--port", default=DEFAULT_PORT, type=port, help=f"default {DEFAULT_PORT}"
    )
    web_parser.set_defaults(func=serve_web)


def port(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"wants a port from 1 to 65535, not {text!r}")
    return int(text)


def serve_web(args: argparse.Namespace) -> int:
    import asyncio

    from plane.cli.web_server import TokenServer  # textual-serve: only when serving

    home = open_home()
    if not asyncio.run(_answers(home)):
        _start_daemon(home)
    token = read_token(home.token)
    if not token:
        raise PlaneError(f"The plane in {home.root} has no token yet; is it starting?")
    host = f"[{args.host}]" if ":" in args.host else args.host
    command = shlex.join([sys.executable, "-P", "-m", "tui", "--socket", str(home.socket)])
    server = TokenServer(
        command, token, host=args.host, port=args.port, public_url=f"http://{host}:{args.port}"
    )
    print(f"The TUI in a browser: http://{host}:{args.port}/?token={token}", flush=True)
    print("(ctrl+c stops serving it; the plane keeps running)", flush=True)
    server.serve()
    return 0
