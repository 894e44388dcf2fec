"""Slash commands typed in a conversation, and the agent's tighten-only ask.

A command is handled by the plane and never sent to the model. Both halves
— what was typed and what the plane answered — are stored in the
conversation, because a ceiling that changed with nothing showing it is one
whose reason nobody can find later. The registry (name, usage, help,
handler) also answers `/help`.

The one setting an agent can touch is its own ceiling, and only downwards:
`ask_limit` applies a tighter ceiling (shown like the operator's, stored
apart from it: see `plane.money.gate`) and refuses a looser one with the exact
line the operator would type. Nothing else — message text, tool output, a
crafted argument — reaches `Ceilings.set`, the operator's, on the agent's
behalf.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager as ContextManager
from dataclasses import dataclass
from decimal import Decimal

from plane.agents.away import kept_or_refused
from plane.agents.group_limit import group_limit
from plane.agents.services import Services
from plane.agents.session import new_session
from plane.money.ceilings import Reread
from plane.money.limits import (
    ALL_PRICED,
    BadLimit,
    Priced,
    fleet_set_reply,
    fleet_standing,
    not_own,
    parse_fleet_limit,
    parse_limit,
    raised_note,
    refusal,
    set_reply,
    standing,
)
from plane.wire.protocol import CommandInfo, ConversationMessage, FleetChanged

PricedAt = Callable[[Decimal], Priced]
"""How much of the agent's spend today has a price, as its row says it,
given that spend (past its fallback's ratio, the fallback's price is weighed)."""

Handler = Callable[[Services, str, str, PricedAt], Awaitable[str]]
"""(services, agent, argument, how its spend is priced) → the plane's reply;
`BadLimit` or `CommandRefused` when the command is refused (its sentence is
the reply, and nothing changed)."""


PricedOf = Callable[[str, Decimal], Priced]
"""A `PricedAt` for any agent, given its name first (`Rows.priced`)."""


def all_priced(spent: Decimal) -> Priced:
    """A `PricedAt` for an agent whose every call has a price."""
    return ALL_PRICED


class CommandRefused(Exception):
    """A command that does not apply here; the message is the plane's reply."""


@dataclass(frozen=True)
class Ran:
    """A command's two halves as stored, and whether it was refused."""

    messages: list[ConversationMessage]
    refused: bool = False


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str
    run: Handler
    between_turns: bool = False
    """Refused while the agent takes a turn, and run with its turn lock held
    (`/new`: a turn's exchange would land in the session started under it)."""
    takes_argument: bool = False
    """Given words after it that it does not take (`/new extra`), it is
    refused with its usage and does nothing: what was meant is unknown."""


async def _limit(services: Services, agent: str, arg: str, priced: PricedAt) -> str:
    """`/limit [AMOUNT|off]`: the agent's spend today as its row says it
    (`$?` on a model with no known price, never `$0.00`), and its ceiling."""
    first, rest = _word(arg)
    if first.lower() == "fleet":
        return await _fleet_limit(services, rest)
    if first.lower() == "group":
        return await group_limit(services, rest)
    spent = await services.ledger.spend_today(agent)
    ceilings = services.gate.ceilings
    if not arg:
        said = standing(spent, ceilings.of(agent), priced(spent))
        if ceilings.raised(agent) is not None:
            said += f" {raised_note(ceilings.unraised(agent))}"
        return said
    value = parse_limit(arg)  # BadLimit: refused (run_command)
    await services.gate.ceilings.set(agent, value.usd)
    return set_reply(spent, value.usd, priced(spent))  # at the ceiling now set


async def _fleet_limit(services: Services, arg: str) -> str:
    """`/limit fleet [AMOUNT|off]`: every agent together, on every plane."""
    spend = services.ledger.budget_spend
    whole = await spend.fleet_today()
    spent = min(await spend.fleet_settled(), whole)  # a call settling between the reads
    in_flight = whole - spent
    ceilings = services.gate.ceilings
    if not arg:
        return fleet_standing(spent, ceilings.fleet(), in_flight)
    value = parse_fleet_limit(arg)  # BadLimit: refused (run_command)
    await ceilings.set_fleet(value.usd)
    services.emit(FleetChanged(limit_usd=value.usd))
    return fleet_set_reply(spent, value.usd, in_flight)


async def _new(services: Services, agent: str, arg: str, priced: PricedAt) -> str:
    """A new session: the model's history is saved whole, then starts empty.
    The conversation people read is untouched."""
    if services.roster.get(agent).gateway is not None:
        raise CommandRefused(
            f"{agent} is a gateway agent: its sessions are its client's, so /new starts none here."
        )
    workspace = services.roster.get(agent).workspace
    saved = await new_session(services.transcript, agent, workspace, services.clock.now())
    if saved is None:
        return "This is already a new session: the model's history is empty."
    return (
        f"New session: the model's history ({saved.messages} messages) is saved in "
        f".transcripts/{saved.file}, and the next turn starts without it."
    )


async def _help(services: Services, agent: str, arg: str, priced: PricedAt) -> str:
    return " ".join(f"{c.usage} — {c.help}." for c in COMMANDS.values())


COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command(
            "limit",
            "/limit [AMOUNT|off]",
            "show today's spend and the daily ceiling, set it (/limit 5), "
            "or remove it (/limit off); /limit fleet does the same for all agents together, "
            "/limit group NAME for a group's",
            _limit,
            takes_argument=True,
        ),
        Command(
            "new",
            "/new",
            "start a new session for the model (its history is saved)",
            _new,
            between_turns=True,
        ),
        Command("help", "/help", "list the commands", _help),
    )
}


def registry() -> list[CommandInfo]:
    """The commands as clients are told of them (in every snapshot)."""
    return [CommandInfo(name=c.name, usage=c.usage, help=c.help) for c in COMMANDS.values()]


def _word(text: str) -> tuple[str, str]:
    """The first word and the rest, split at any whitespace (`/limit\t8` is
    `/limit 8`, as a shell reads it)."""
    words = text.split(None, 1)
    return (words[0], words[1].strip() if len(words) > 1 else "") if words else ("", "")


def is_command(text: str) -> bool:
    return text.startswith("/")


def between_turns(text: str) -> bool:
    """The command typed runs only between the agent's turns."""
    command = COMMANDS.get(_word(text[1:])[0].lower())
    return command is not None and command.between_turns


def over_many(text: str) -> Reread | None:
    """The ceiling over many agents a typed `/limit fleet …` or `/limit
    group NAME …` is about, as a read of the ceilings says what changed
    (`Rows.ceilings_changed`): the fleet's, or the group's (none named: no
    group's). None: another command, which is about one agent at most."""
    name, arg = _word(text[1:])
    over, rest = _word(arg)
    if name.lower() != "limit" or over.lower() not in ("fleet", "group"):
        return None
    if over.lower() == "fleet":
        return Reread(fleet=True)
    group, _ = _word(rest)
    return Reread(groups=frozenset([group] if group else []))


async def run_command(
    services: Services,
    agent: str,
    text: str,
    *,
    in_a_turn: bool = False,
    priced: PricedAt = all_priced,
) -> Ran:
    """Store the command and the plane's reply; return both, and whether the
    command was refused (unknown, its argument bad or one it does not take,
    or not while the agent takes a turn: nothing changed). `priced`: how
    the agent's row prices its spend, which `/limit` says as the row does."""
    name, arg = _word(text[1:])
    with _binding(services, agent, name, arg):
        return await _run(services, agent, text, name, arg, in_a_turn, priced)


def _binding(services: Services, agent: str, name: str, arg: str) -> ContextManager[None]:
    """An agent's own `/limit AMOUNT` binds from the moment it is read
    (`Ceilings.binding`), not once its writes have waited behind the agents'
    traffic: the agent's next turn or call is held to it."""
    if name.lower() != "limit" or _word(arg)[0].lower() in ("", "fleet", "group"):
        return contextlib.nullcontext()
    try:
        value = parse_limit(arg)
    except BadLimit:
        return contextlib.nullcontext()
    if value.usd is None:
        return contextlib.nullcontext()  # off: never looser before it is stored
    return services.gate.ceilings.binding(agent, value.usd)


async def _run(
    services: Services,
    agent: str,
    text: str,
    name: str,
    arg: str,
    in_a_turn: bool,
    priced: PricedAt,
) -> Ran:
    typed = await kept_or_refused(
        services.ledger, lambda: services.conversation.append(agent, "operator", text)
    )
    command = COMMANDS.get(name.lower())
    refused = command is None
    if command is None:
        known = ", ".join(f"/{n}" for n in COMMANDS)
        reply = f"/{name} is not a command. Commands: {known}."
    elif arg and not command.takes_argument:
        refused = True
        reply = f"/{command.name} takes nothing after it: {command.usage} — {command.help}."
    elif in_a_turn and command.between_turns:
        refused = True
        reply = (
            f"{agent} is taking a turn: /{command.name} once it ends, or interrupt it first "
            f"(Esc in the TUI, or plane interrupt {agent})."
        )
    else:
        try:
            reply = await command.run(services, agent, arg, priced)
        except (BadLimit, CommandRefused) as exc:
            reply, refused = str(exc), True
    answer = await services.conversation.append(agent, "plane", reply)
    return Ran([typed, answer], refused)


RefusedAsk = Callable[[str, str, Decimal | None, Decimal], None]
"""Told (agent, the plane's reply, the ceiling asked for: None is none, the
ceiling it has) when an agent asks for a looser ceiling and is refused: the
operator is needed (the alerts', which offer the raise)."""


async def ask_limit(
    services: Services,
    agent: str,
    raw: str,
    refused: RefusedAsk | None = None,
    *,
    priced: PricedAt = all_priced,
) -> tuple[list[ConversationMessage], str]:
    """An agent asks for its own ceiling: applied if tighter, refused if not
    (and `refused` told). Returns the stored messages and the reply (which
    the agent also reads), its spend said as its row says it (`priced`:
    `$?` on a model with no known price, never `$0.00`), as `/limit` does."""
    raw = " ".join(raw.split())[:40]
    asked = await services.conversation.append(agent, "ask", f"/limit {raw}")
    has = services.gate.ceilings.of(agent)
    spent = await services.ledger.spend_today(agent)
    try:
        if _word(raw)[0].lower() in ("group", "fleet"):  # never another's: the operator's
            raise BadLimit(not_own(raw))
        value = parse_limit(raw)
    except BadLimit as exc:
        reply = str(exc)
    else:
        if await services.gate.ceilings.ask(agent, value.usd):
            ceiling = services.gate.ceilings.of(agent)
            reply = set_reply(spent, ceiling, priced(spent))  # at the ceiling now set
        else:
            assert has is not None
            reply = refusal(value.usd, has)
            if refused is not None:
                refused(agent, reply, value.usd, has)
    answer = await services.conversation.append(agent, "plane", reply)
    return [asked, answer], reply
