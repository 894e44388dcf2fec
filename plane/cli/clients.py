"""Commands that ask the running plane: send, ledger, new (status: `status`)."""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import sys
from datetime import date
from decimal import Decimal
from typing import Any, Literal

from plane.cli.connect import NotAnswering, remote, with_client
from plane.cli.failing import EXIT_INTERRUPTED, EXIT_KEPT, NoAnswer, say
from plane.errors import NotRunning, PlaneError
from plane.home import Home
from plane.wire import protocol as p
from plane.wire.client import PlaneClient
from plane.wire.words import (
    UNPRICED,
    at_a_floor,
    call_count,
    floor_priced,
    not_all_priced,
    plain,
    terminal_safe,
    unpriced_call,
    usd,
    usd_exact,
)

WAIT_S = 600.0
"""How long `send --wait` waits unless told (--timeout)."""


def send(args: argparse.Namespace) -> int:
    """Post the message; interrupted (Ctrl+C), say what is known of it."""
    went: list[Went] = ["not"]
    try:
        return with_client(lambda client: _send(client, args, went))
    except KeyboardInterrupt:
        say(interrupted(args.agent, went[-1], waiting=args.wait))
        return EXIT_INTERRUPTED


Went = Literal["not", "perhaps", "yes"]
"""How far the message went: not sent, written with no reply yet, kept by the plane."""


def interrupted(agent: str, went: Went, *, waiting: bool) -> str:
    """What Ctrl+C leaves of a `plane send`: whether to send it again."""
    if went == "not":
        return f"Interrupted before the message was sent: {agent} did not get it."
    if went == "perhaps":
        return (
            f"Interrupted as the message was sent: {agent} may have it (`plane log {agent}` says)."
        )
    if waiting:
        return (
            f"Stopped waiting: the message to {agent} was sent and kept, and its turn goes on "
            f"(`plane log {agent}` shows the answer)."
        )
    return f"Interrupted: the message to {agent} was sent and kept."


async def _send(client: PlaneClient, args: argparse.Namespace, went: list[Went]) -> int:
    """`went` follows the message, for what an interrupt says."""
    timeout = WAIT_S if args.timeout is None else args.timeout
    if args.wait:
        await client.request(p.Subscribe())
    went.append("perhaps")
    reply = await client.request(p.Send(agent=args.agent, text=args.text))
    went.append("yes")
    said = [m for m in reply.messages if m.kind != "operator"]
    for message in said:
        print(send_line(message))
    if reply.refused:  # the plane's reply above says why nothing comes of it
        return 1
    if args.wait and any(m.held for m in reply.messages):
        # Kept, not answered: no turn is coming to wait for. The plane's
        # notice above says why; told already this spell, this line does.
        if not said:
            print(kept_held(args.agent))
        return EXIT_KEPT
    if args.wait and not said:
        try:
            sent = max((m.id for m in reply.messages), default=0) if reply.elsewhere else None
            return await asyncio.wait_for(_answer(client, args.agent, sent), timeout)
        except TimeoutError:
            raise NoAnswer(
                f"No answer from {args.agent} within {timeout:g}s; its turn goes on "
                "(`plane status` shows it)."
            ) from None
    return 0


async def _answer(client: PlaneClient, agent: str, elsewhere: int | None) -> int:
    """Print the agent's side until its turn finishes: the turn that starts
    after the message, not one already running (it read what waited before
    the message came, so its answer and its end are another message's). An
    agent another plane of the fleet runs (`elsewhere`: the message's id) is
    followed by its lines after the message and by its row, as this plane
    tells them at its renewals: its turn is over once the row has nothing
    waiting (its question is marked answered in the commit that writes its
    answer and its cost line), and it failed if it left only the plane's
    notices or a cost line marked failed (`answered`).
    A plane that hangs up meanwhile is said as that: the message is
    delivered, so "no plane is running" would read as if it were lost."""
    ours: int | None = None
    said: list[p.ConversationMessage] = []  # what was printed of the turn
    async for event in client.events():
        if isinstance(event, p.TurnStarted) and event.agent == agent and ours is None:
            ours = event.turn
        elif isinstance(event, p.MessageAppended) and event.message.agent == agent:
            message = event.message
            theirs = ours is None and elsewhere is not None and message.id > elsewhere
            if (ours is not None or theirs) and message.kind != "operator":
                print(send_line(message), flush=True)
                said.append(message)
        elif isinstance(event, p.TurnFinished) and event.agent == agent and event.turn == ours:
            if event.held:  # kept, not answered: the plane's notice above says why
                return EXIT_KEPT
            return 0 if event.ok else 1
        elif isinstance(event, p.AgentUpdated) and event.agent.name == agent:
            if ours is not None or elsewhere is None:
                continue
            if event.agent.status in ("held", "paused") and event.agent.waiting:
                # Kept, not answered. The row and the lines come at renewals,
                # apart: the notice of why may come after the row that says
                # held, or be told already this spell. Said here if not above.
                if not any(m.kind == "plane" for m in said):
                    print(kept_held(agent), flush=True)
                return EXIT_KEPT
            if event.agent.status != "working" and not event.agent.waiting:
                return 0 if answered(said) else 1
    raise PlaneError(
        f"The plane closed the connection before {agent} answered (is it stopping?); the "
        "message is kept, and answered when the plane runs again."
    )


def kept_held(agent: str) -> str:
    """What `plane send` says of a message kept because its agent is held,
    where the plane's own notice of why was not printed with it."""
    return (
        f"{agent} is held: the message is kept, marked held, and answered "
        f"when {agent} takes turns again (`plane log {agent}` says why)."
    )


def answered(said: list[p.ConversationMessage]) -> bool:
    """Whether a turn another plane ran, told by its lines alone, went
    through: it wrote an answer or a cost line, and no cost line says the
    turn failed. A turn whose call failed unbilled leaves only the plane's
    notice of it (`The turn stopped: …`), which is the sentence the command
    ends with, as on the plane that ran it. One that failed after calls it
    paid for (an answer that broke off, an error after a paid call) has a
    cost line too, marked failed (`ConversationMessage.failed`)."""
    went = any(m.kind in ("agent", "cost") for m in said)
    return went and not any(m.failed for m in said)


def send_line(message: p.ConversationMessage) -> str:
    """A message as `plane send --wait` prints it: control characters shown,
    never obeyed."""
    prefix = {"ask": "‹ask› ", "tool": "· ", "cost": "  "}.get(message.kind, "")
    return prefix + terminal_safe(message.text)


def ledger(args: argparse.Namespace) -> int:
    async def work(client: PlaneClient) -> int:
        reply = await client.request(p.Ledger(day=args.day))
        return _show_ledger(args, reply.day, reply.entries)

    try:
        return with_client(work)
    except (NotRunning, NotAnswering):
        if remote() is not None:
            raise
        # No plane to ask: the home's file, read-only, says the same.
        from plane.cli.offline import ledger_entries  # the ledger's module: only without a plane

        return _show_ledger(args, *ledger_entries(Home.from_env(), args.day))


def _show_ledger(args: argparse.Namespace, day: date, entries: list[p.LedgerEntry]) -> int:
    rows = [_entry_row(e) for e in entries]
    if args.json:
        print(json.dumps({"day": day.isoformat(), "calls": rows}, indent=2))
    elif args.csv:
        _write_csv(rows)
    else:
        _print_ledger(day, entries)
    return 0


def _entry_row(e: p.LedgerEntry) -> dict[str, Any]:
    return {
        "id": e.id,
        "agent": e.agent,
        "day": e.day.isoformat(),
        "at": e.at.isoformat(),
        "provider": e.provider,
        "model": e.model,
        # The counts the ledger keeps: the audio parts are in the cost, not in a column.
        **e.usage.model_dump(include=set(LEDGER_FIELDS)),
        "cost_usd": plain(e.cost_usd),
        "price_source": e.price_source,
        "status": e.status,
        "estimated": e.estimated,
        # Its price source says a floor in words: a script reads it here.
        "floor_priced": floor_priced(e.price_source),
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
    "cache_write_1h_tokens",
    "output_tokens",
    "cost_usd",
    "price_source",
    "status",
    "estimated",
    "floor_priced",
]


def _write_csv(rows: list[dict[str, Any]]) -> None:
    writer = csv.DictWriter(sys.stdout, fieldnames=LEDGER_FIELDS)
    writer.writeheader()
    writer.writerows(rows)


def _print_ledger(day: date, entries: list[p.LedgerEntry]) -> None:
    print("\n".join(ledger_lines(day, entries)))


def ledger_lines(day: date, entries: list[p.LedgerEntry]) -> list[str]:
    """A day's calls as `plane ledger` prints them. A call no price is known
    for shows `unpriced`, one priced at a floor `$0.00021 + unpriced` (as
    its line in the conversation says), and the day's total says how many
    of each it holds, as `--summary` does."""
    total = sum((e.cost_usd for e in entries), Decimal(0))
    unpriced = sum(e.price_source == UNPRICED for e in entries)
    floor = sum(floor_priced(e.price_source) for e in entries)
    lines = [
        f"{day} (UTC): {call_count(len(entries))}, {usd(total)}" + not_all_priced(unpriced, floor)
    ]
    for e in entries:
        u = e.usage
        tokens = f"in {u.input_tokens} (cached {u.cache_read_tokens})  out {u.output_tokens}"
        lines.append(f"  {e.at:%H:%M:%S}  {e.agent}  {e.model}  {tokens}  {_cost(e)}  {_status(e)}")
    return lines


def _cost(e: p.LedgerEntry) -> str:
    if e.price_source == UNPRICED:
        return UNPRICED
    if floor_priced(e.price_source):
        return at_a_floor(f"${plain(e.cost_usd)}")
    return f"${plain(e.cost_usd)}"


def _status(e: p.LedgerEntry) -> str:
    """A call settled without the provider's usage (a stream cut off, a broken
    answer) was charged its estimate, as `--json` says: the listing says so
    too, or the figure would read as measured. Pending and interrupted calls
    are at their estimate by what they are. A call no price is known for,
    and one priced at a floor, are marked an estimate as well (`--json`:
    they teach no estimate), but their cost says what it is (`unpriced`,
    `+ unpriced`): `(estimated)` would read as a call whose usage never
    came, or whose cost was estimated, where it is not known."""
    if e.status == "settled" and e.estimated and not unpriced_call(e.price_source):
        return "settled (estimated)"
    return e.status


async def _default_model(client: PlaneClient) -> str:
    """The plane's `defaults.model` (the plane's, not this machine's agents.yaml)."""
    reply = await client.request(p.Status())
    if reply.snapshot.default_model is None:
        raise PlaneError("This plane does not say its default model; give one with --model.")
    return reply.snapshot.default_model


def new(args: argparse.Namespace) -> int:
    async def work(client: PlaneClient) -> int:
        model = args.model or await _default_model(client)
        asked = p.NewAgent(name=args.name, model=model, role=args.role, tools=args.tools)
        reply = await client.request(asked)
        a = reply.agent
        ceiling = "no limit" if a.limit_usd is None else f"{usd_exact(a.limit_usd)} a day"
        from plane.agents.toolsets import described  # loads the config's models: only here

        print(f"Created {a.name} on {a.model}, {ceiling}, {described(a.tools)}.")
        if not a.price_known and a.limit_usd is not None:  # said now, not by its first message
            from plane.agents.notices import unpriced_held  # the plane's words when it holds one

            print(unpriced_held(a.name, a.model, off=f"`plane edit {a.name} --limit off`"))
        return 0

    return with_client(work)
