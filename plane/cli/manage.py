"""Managing agents from the command line: `plane delete|pause|resume|rename|
edit|interrupt AGENT …`, `plane show AGENT` and `plane log AGENT [-n N]`.

Each is one request to the running plane, which checks and decides; what it
refuses is its own sentence on stderr and exit code 1, nothing changed.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from plane.cli import arguments as arg
from plane.cli.connect import with_client
from plane.cli.status import held_for
from plane.errors import NoSuchAgent, PlaneError
from plane.wire import protocol as p
from plane.wire.client import PlaneClient
from plane.wire.words import UNPRICED, pace, reaches, spend_priced, terminal_safe, usd_exact

LOG_LINES = 20
NAMED = "the agent's name"


def add_commands(sub: Any) -> None:
    """`sub`: the `plane` parser's subparsers."""
    agent = arg.text("agent name")

    delete = sub.add_parser(
        "delete",
        help="delete an agent made at run time (its conversation and ledger rows are kept; "
        "its spend still counts today)",
    )
    delete.add_argument("agent", type=agent, help=NAMED)
    delete.add_argument("--yes", action="store_true", help="do not ask to confirm")
    delete.set_defaults(func=delete_agent)

    for name, paused, said in (
        ("pause", True, "pause an agent: no new turn until resumed (its ceiling is kept)"),
        ("resume", False, "resume a paused agent, or one the loop guard held: it goes on"),
    ):
        command = sub.add_parser(name, help=said)
        command.add_argument("agent", type=agent, help=NAMED)
        command.set_defaults(func=pause_agent, paused=paused)

    rename = sub.add_parser("rename", help="rename an agent (its conversation and spend follow)")
    rename.add_argument("agent", type=agent, help=NAMED)
    rename.add_argument("new_name", type=arg.text("new name"), help="its new name")
    rename.set_defaults(func=rename_agent)

    edit = sub.add_parser("edit", help="change an agent's role, model, tools or ceiling")
    edit.add_argument("agent", type=agent, help=NAMED)
    edit.add_argument("--role", type=arg.text("role", blank=True), help="the role / system prompt")
    edit.add_argument("--model", type=arg.text("model"), help="the model it runs on")
    edit.add_argument(
        "--tools",
        type=arg.text("list of tools"),
        help=(
            "all, read-only, none (as plane new), or names: read_file,grep "
            "(an MCP server's as server.tool or server.*)"
        ),
    )
    edit.add_argument("--limit", type=arg.text("limit"), help="the daily ceiling: 5, $0.25 or off")
    edit.set_defaults(func=edit_agent)

    interrupt = sub.add_parser(
        "interrupt", help="cut an agent's running turn (the conversation says what it cost)"
    )
    interrupt.add_argument("agent", type=agent, help=NAMED)
    interrupt.set_defaults(func=interrupt_turn)

    show = sub.add_parser(
        "show", help="an agent whole: model, role, tools, ceiling and its source, bookings"
    )
    show.add_argument("agent", type=agent, help=NAMED)
    show.set_defaults(func=show_agent)

    log = sub.add_parser("log", help="an agent's conversation, the newest messages")
    log.add_argument("agent", type=agent, help=NAMED)
    log.add_argument(
        "-n", type=_count, default=LOG_LINES, help=f"how many messages (default {LOG_LINES})"
    )
    log.set_defaults(func=show_log)


def _count(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= 10_000:
        raise argparse.ArgumentTypeError(f"wants a number from 1 to 10000, not {text!r}")
    return int(text)


def delete_agent(args: argparse.Namespace) -> int:
    async def there(client: PlaneClient) -> int:
        status = await client.request(p.Status())
        if all(a.name != args.agent for a in status.snapshot.agents):
            raise NoSuchAgent(args.agent)
        return 0

    async def work(client: PlaneClient) -> int:
        await client.request(p.DeleteAgent(agent=args.agent))
        print(f"Deleted {args.agent}; its conversation and ledger rows are kept.")
        return 0

    # An agent that is not there is said first, not after a confirmation (or a
    # missing --yes) about deleting it. The question is asked with no event
    # loop running: the loop's own SIGINT handler would swallow a ctrl+c there.
    with_client(there)
    if not args.yes and not _confirmed(args.agent):
        print("Nothing deleted.")
        return 1
    return with_client(work)


def _confirmed(agent: str) -> bool:
    if not sys.stdin.isatty():
        raise PlaneError(f"Deleting {agent} needs --yes when nobody is there to confirm.")
    asked = f"Delete {agent}? Its conversation and ledger rows are kept. [y/N] "
    try:
        return input(asked).strip().lower() in ("y", "yes")
    except EOFError:  # ctrl+d: no answer is no
        print()
        return False


def pause_agent(args: argparse.Namespace) -> int:
    async def work(client: PlaneClient) -> int:
        reply = await client.request(p.PauseAgent(agent=args.agent, paused=args.paused))
        a = reply.agent
        if args.paused:
            print(f"Paused {a.name}: it takes no new turn until `plane resume {a.name}`.")
        else:
            print(f"Resumed {a.name}.")
        return 0

    return with_client(work)


def rename_agent(args: argparse.Namespace) -> int:
    async def work(client: PlaneClient) -> int:
        await client.request(p.RenameAgent(agent=args.agent, new_name=args.new_name))
        print(f"Renamed {args.agent} to {args.new_name}.")
        return 0

    return with_client(work)


def edit_agent(args: argparse.Namespace) -> int:
    tools = None if args.tools is None else [t for t in args.tools.split(",") if t.strip()]
    if tools == []:
        raise PlaneError("--tools wants all, read-only, none, or tool names separated by commas.")

    async def work(client: PlaneClient) -> int:
        edit = p.EditAgent(
            agent=args.agent, role=args.role, model=args.model, tools=tools, limit=args.limit
        )
        reply = await client.request(edit)
        print(f"Edited {args.agent}.")
        print(agent_settings(reply.agent))
        return 0

    return with_client(work)


def interrupt_turn(args: argparse.Namespace) -> int:
    async def work(client: PlaneClient) -> int:
        await client.request(p.Interrupt(agent=args.agent))
        print(f"Interrupted {args.agent}'s turn; its conversation says what it cost.")
        return 0

    return with_client(work)


def show_agent(args: argparse.Namespace) -> int:
    async def work(client: PlaneClient) -> int:
        print(shown(await client.request(p.ShowAgent(agent=args.agent))))
        return 0

    return with_client(work)


def shown(details: p.ShowAgentReply) -> str:
    """What `plane show` prints (the agent's group named when its ceiling
    holds the agent)."""
    a = details.agent
    made = "from agents.yaml" if details.made == "agents.yaml" else "made at run time"
    lines = [
        f"{a.name} ({made}{'; a gateway agent' if a.gateway else ''})",
        agent_settings(a, details.ceiling_from),
        f"  today      {_spent(a)} spent · {a.status}"
        + (" in a loop" if a.status == "held" and a.hold_reason == "loop" else "")
        + (f" · {a.waiting} waiting" if a.waiting else "")
        + (f" · `plane resume {a.name}` lets it go on" if a.hold_reason == "loop" else "")
        + _held_line(a, details.group),
        *_burn_line(a),
    ]
    if a.gateway:  # its client has the rest
        return "\n".join(lines)
    sessions = f"{details.sessions} saved, {details.session_messages} messages in the current one"
    bookings = details.bookings or ["none"]
    lines += [
        f"  workspace  {details.workspace}",
        f"  sessions   {sessions}",
        f"  bookings   {bookings[0]}",
        *(f"             {b}" for b in bookings[1:]),
    ]
    return "\n".join(lines)


def _held_line(a: p.AgentState, group: str | None) -> str:
    """Why a held agent is held and what frees it, as `plane status` says it
    (`· group research's ceiling: resumes at 00:00 UTC`); a loop's is said
    before. The time is the plane's, not this machine's clock's."""
    if a.status != "held" or a.hold_reason == "loop":
        return ""
    resumes = None if a.resumes_at is None else f"resumes at {a.resumes_at:%H:%M} UTC"
    said = held_for(a.hold_reason, a.name, group, resumes)
    return f" · {said}" if said else ""


def _spent(a: p.AgentState) -> str:
    """Its spend today as `plane status` says it: `$?` where no price is known."""
    return spend_priced(
        a.spend_today_usd, a.limit_usd, price_known=a.price_known, floor_priced=a.floor_priced
    )


def agent_settings(a: p.AgentState, source: str | None = None) -> str:
    """An agent's model, role, tools and ceiling, as `plane show` and `plane
    edit` print them; `source` says where its ceiling comes from."""
    if a.gateway:
        what = ["  calls      from its own client, with the client's tools and prompt"]
    else:
        tools = "every tool" if a.tools is None else ", ".join(a.tools) or "none"
        if a.tools is not None and set(a.tools) == set(p.READ_ONLY_TOOLS):
            tools = f"read-only: {tools}"
        # A role of several lines stays in its column, under its first line.
        role = terminal_safe(a.role).replace("\n", "\n" + " " * 13) or "(none)"
        what = [f"  role       {role}", f"  tools      {tools}"]
    return "\n".join([_model_line(a), *what, _ceiling_line(a, source)])


def _model_line(a: p.AgentState) -> str:
    line = f"  model      {a.model} ({a.provider}{'' if a.price_known else ', ' + UNPRICED})"
    if a.stepped_down_from:  # near its ceiling, on its cheaper fallback
        line += f" · fallback from {a.stepped_down_from} until 00:00 UTC"
    return line


def _burn_line(a: p.AgentState) -> list[str]:
    """`  pace       $1.20 an hour · reaches $5.00 at 14:20 UTC at this rate`."""
    if a.burn_usd_per_hour is None:
        return []
    line = f"  pace       {pace(a.burn_usd_per_hour)}"
    if a.reaches_ceiling_at is not None and a.limit_usd is not None:
        line += f" · {reaches(a.limit_usd, a.reaches_ceiling_at)}"
    return [line]


def _ceiling_line(a: p.AgentState, source: str | None) -> str:
    ceiling = "no ceiling" if a.limit_usd is None else f"{usd_exact(a.limit_usd)} a day"
    if source == "the alert":
        ceiling += ", raised from an alert until 00:00 UTC"
    elif source is not None and source != "none":
        ceiling += f", from {source}"
    return f"  ceiling    {ceiling}" + (" · paused" if a.paused else "")


def show_log(args: argparse.Namespace) -> int:
    async def work(client: PlaneClient) -> int:
        reply = await client.request(p.History(agent=args.agent, limit=args.n))
        for message in reply.messages:
            print(log_line(message))
        return 0

    return with_client(work)


WHO = {"operator": "you", "plane": "plane", "ask": "‹ask›", "tool": "·", "cost": " "}


def log_line(m: p.ConversationMessage) -> str:
    who = m.agent if m.kind == "agent" else WHO[m.kind]
    held = " (held)" if m.held else ""
    text = terminal_safe(m.text).replace("\n", "\n" + " " * 17)
    return f"{m.at:%Y-%m-%d %H:%M} {who:<6} {text}{held}"
