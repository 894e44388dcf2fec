"""The `plane` command's parser and its `main`: every command but the few
`plane.entry` sends elsewhere first (see `plane.cli`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from plane.cli import arguments as arg
from plane.cli import clients, connect, daemon, failing, manage, status
from plane.cli.ledger_summary import add_commands as add_summary_commands
from plane.cli.web import add_commands as add_web_commands
from plane.economy.compress.cli import add_commands as add_compression_commands
from plane.home import Home, user_config_path
from plane.usage import OneLineParser


def main(argv: list[str] | None = None) -> int:
    """Run one command. Whatever goes wrong is one line on stderr and an exit
    code (see `failing.failed`), never a traceback."""
    try:
        top = parser()
        args = top.parse_args(_token_joined(sys.argv[1:] if argv is None else argv))
        if getattr(args, "remote_tcp", None) is None and getattr(args, "remote_token", None):
            top.error("--token goes with --tcp HOST:PORT (on the socket it is read)")
        connect.aim(_remote(args))
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # here, where a closed pipe is still ours to answer
        return code
    except SystemExit:
        raise
    except BaseException as exc:
        return failing.failed(exc)


def _token_joined(argv: list[str]) -> list[str]:
    """`--token T` as `--token=T`: a token may begin with `-` (one in 64
    does), which argparse would take for an option and refuse as "expected
    one argument". Only the top-level option, before the command."""
    for at, word in enumerate(argv):
        if word == "--token" and at + 1 < len(argv):
            return [*argv[:at], f"--token={argv[at + 1]}", *argv[at + 2 :]]
        if not word.startswith("-") and (at == 0 or argv[at - 1] != "--tcp"):
            break  # the command: what follows is its own
    return argv


def parser() -> argparse.ArgumentParser:
    top = OneLineParser(
        prog="plane",
        description="A control plane for always-on LLM agents, with a daily spend ceiling "
        "per agent. With no command, opens the TUI (starting the plane if none runs).",
        epilog="The plane reads ./agents.yaml where it starts, else "
        f"{user_config_path()} (`plane status` says which), and keeps what it writes in "
        f"{Home.from_env().root} ($PLANE_HOME). `plane COMMAND --help` says more.",
    )
    top.set_defaults(func=daemon.tui)
    top.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    top.add_argument(
        "--tcp",
        dest="remote_tcp",
        metavar="HOST:PORT",
        type=arg.peer,
        help="talk to the plane on TCP (`plane serve --tcp`), for the TUI and every client "
        "command: `plane --tcp HOST:PORT status`",
    )
    top.add_argument(
        "--token",
        dest="remote_token",
        metavar="T",
        help="the plane's token for --tcp (default: $PLANE_TOKEN, else the file `token` "
        "in this machine's $PLANE_HOME)",
    )
    sub = top.add_subparsers(title="commands", metavar="COMMAND")

    serve = sub.add_parser(
        "serve", help="run the plane in the foreground (--http: the gateway and /metrics)"
    )
    serve.add_argument(
        "--config",
        type=Path,
        help=f"agents.yaml (default: ./agents.yaml, else {user_config_path()})",
    )
    serve.add_argument(
        "--tcp",
        metavar="HOST:PORT",
        type=arg.address,
        help="also listen on TCP (port 0: a free one, said at start); clients need the "
        "token in $PLANE_HOME/token",
    )
    serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=arg.address,
        help="also serve the gateway's HTTP APIs (Anthropic Messages, OpenAI Chat "
        "Completions and Responses) for gateway agents' clients, and /metrics for "
        "Prometheus (bearer: the token in $PLANE_HOME/token); port 0 picks a free one",
    )
    serve.set_defaults(func=daemon.serve)

    key = sub.add_parser("key", help="make a new key for a gateway agent (the old one stops)")
    key.add_argument("agent", type=arg.text("agent name"), help="the gateway agent's name")
    key.add_argument("--config", type=Path, help="agents.yaml (as for serve)")
    key.set_defaults(func=daemon.key)

    gateway = sub.add_parser("gateway", help="point Claude Code, Codex or Aider at the plane")
    gateway_sub = gateway.add_subparsers(title="commands", metavar="COMMAND", required=True)
    env = gateway_sub.add_parser("env", help="the lines that point a client at a gateway agent")
    env.add_argument(
        "agent", type=arg.text("agent name"), help="the gateway agent the client's calls go to"
    )
    env.add_argument(
        "--client",
        required=True,
        choices=["claude-code", "codex", "aider"],
        help="the client to point at the plane",
    )
    env.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=arg.peer,
        default=None,
        help="where a gateway listens (default: where the running plane's does)",
    )
    env.add_argument(
        "--tag",
        type=arg.tag,
        default=None,
        help="a tag every call of the client carries (x-plane-tag): what the work is for",
    )
    env.add_argument("--config", type=Path, help="agents.yaml (as for serve)")
    env.set_defaults(func=daemon.gateway_env)

    stop = sub.add_parser("stop", help="stop the running plane; returns once it has stopped")
    stop.add_argument(
        "--no-wait", action="store_true", help="return once the plane has been told to stop"
    )
    stop.add_argument(
        "--timeout",
        type=arg.seconds,
        help=f"seconds to wait for it to stop (default {daemon.STOP_TIMEOUT_S:.0f})",
    )
    stop.set_defaults(func=_unless(daemon.stop, stop, "timeout", without="no_wait", negated=True))

    status.add_command(sub)

    send = sub.add_parser("send", help="post a message (or /limit …) to an agent as the operator")
    send.add_argument("agent", type=arg.text("agent name"), help="the agent's name")
    send.add_argument(
        "text", type=arg.text("text"), help="the message, or a slash command (/limit 5, /help)"
    )
    send.add_argument(
        "--wait",
        action="store_true",
        help="wait for the agent's answer (exit 124: none in time; 75: kept, not answered now)",
    )
    send.add_argument(
        "--timeout",
        type=arg.seconds,
        help=f"seconds --wait waits (default: {clients.WAIT_S:.0f})",
    )
    send.set_defaults(func=_unless(clients.send, send, "timeout", without="wait"))

    ledger = sub.add_parser(
        "ledger", help="every LLM call of a day, with tokens and cost (--summary: sums over days)"
    )
    ledger.add_argument("--day", type=arg.day, help="YYYY-MM-DD (default: today, UTC)")
    form = ledger.add_mutually_exclusive_group()
    form.add_argument(
        "--json", action="store_true", help="as JSON, with exact figures (and calls by status)"
    )
    form.add_argument("--csv", action="store_true", help="as CSV, with exact figures")
    ledger.set_defaults(func=clients.ledger)

    new = sub.add_parser("new", help="create an agent (it gets the defaults, ceiling included)")
    new.add_argument("name", type=arg.text("name"), help="the new agent's name")
    new.add_argument("--model", type=arg.text("model"), help="the model (default: defaults.model)")
    new.add_argument(
        "--role", default="", type=arg.text("role", blank=True), help="the role / system prompt"
    )
    new.add_argument(
        "--tools",
        choices=["none", "read-only", "all"],
        help="the tools it gets (default: what suits the model; none on the embedded one)",
    )
    new.set_defaults(func=clients.new)

    add_compression_commands(sub)
    manage.add_commands(sub)
    add_summary_commands(sub)
    add_web_commands(sub)
    return top


def _unless(
    run: Callable[[argparse.Namespace], int],
    parser: argparse.ArgumentParser,
    option: str,
    *,
    without: str,
    negated: bool = False,
) -> Callable[[argparse.Namespace], int]:
    """`run`, once `--OPTION` is known to mean something: a `--timeout`
    given where nothing waits would be ignored without a word."""

    def checked(args: argparse.Namespace) -> int:
        if getattr(args, option) is not None and bool(getattr(args, without)) == negated:
            flag = without.replace("_", "-")
            parser.error(
                f"--{option} is how long --{flag} waits; without it, nothing waits"
                if not negated
                else f"--{option} is how long to wait; with --{flag}, nothing waits"
            )
        return run(args)

    return checked


def _remote(args: argparse.Namespace) -> connect.Remote | None:
    tcp = getattr(args, "remote_tcp", None)
    if tcp is None:
        return None
    return connect.Remote(tcp, args.remote_token or os.environ.get("PLANE_TOKEN") or None)


class _Version(argparse.Action):
    """`--version`, looked up only when asked: reading the installed
    packages' metadata costs every other command tens of milliseconds."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("plane")
        except PackageNotFoundError:
            found = "(not installed)"
        print(f"plane {found}")
        parser.exit()


# ── the daemon ─────────────────────────────────────────────────────────────
