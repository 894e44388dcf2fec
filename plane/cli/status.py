"""`plane status`: the day, and each agent's spend and ceiling.

Scripts poll it, so it starts fast: `plane.entry` sends `plane status ...`
here without loading `plane.cli` (the protocol's models, pydantic), and the
snapshot is read as the plain JSON it is on the wire (`plane.wire.once`), on
a plain socket: no event loop either. `plane --tcp HOST:PORT status` comes
through `plane.cli`, to the same code.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import sys
from datetime import datetime
from decimal import Decimal
from typing import Any

from plane.cli.connect import ask
from plane.home import Home
from plane.usage import OneLineParser, described
from plane.wire.once import ROW_DEFAULTS, rows
from plane.wire.words import (
    UNPRICED,
    config_said,
    duration,
    in_flight_apart,
    plain,
    reaches,
    some_names,
    spend_against,
    spend_priced,
    spend_total,
    store_unreachable,
    usd,
    usd_exact,
)

HELP = "the day and its spend, and each agent's state, spend and ceiling"


def add_command(sub: Any) -> None:  # argparse's subparsers action
    parser = sub.add_parser("status", help=HELP)
    _arguments(parser)
    parser.set_defaults(func=status)


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable")


def main(argv: list[str]) -> int:
    """`plane status ...` straight from `plane.entry`: whatever goes wrong
    is one line and an exit code, as for every command (`failing`). The
    process ends with the command: the collector, which would walk the
    snapshot's rows again and again as they are read, is off."""
    gc.disable()
    parser = OneLineParser(prog="plane status", description=described(HELP))
    _arguments(parser)
    args = parser.parse_args(argv)
    try:
        code = status(args)
        sys.stdout.flush()
        return code
    except BaseException as exc:
        from plane.cli.failing import failed  # pydantic's: only when something failed

        return failed(exc)


def status(args: argparse.Namespace) -> int:
    snapshot: dict[str, Any] = ask(Home.from_env(), {"type": "status"})["snapshot"]
    print(status_json(snapshot) if args.json else status_text(snapshot))
    return 0


def status_json(snapshot: dict[str, Any]) -> str:
    """What the TUI is told, for scripts: `default_model` and
    `default_limit_usd` are what `plane new` gives an agent; an agent's
    `resumes_at` is when a held one starts again on its own (null if it
    does not: not held, a zero ceiling, an unpriced model); `price_known`
    false: its model's calls are counted at $0, which is not their cost.
    `fleet_spend_today_usd` is the day's spend of every agent together,
    agents deleted today included (deleting never refunds), so it can be
    more than the rows add up to; `fleet_limit_usd` is the fleet's ceiling
    (null: none). `store_unreachable_since`: since when the shared store
    (PostgreSQL) cannot be reached, null when it can; while it is set, the
    spend figures are as last read. An agent's `burn_usd_per_hour` is its
    pace (null: nothing spent lately) and `reaches_ceiling_at` when it reaches
    its ceiling at that pace, set only when that is before `resets_at`.
    `hold_reason`: why a held agent is held (`ceiling`, `loop`: the loop
    guard's, which `plane resume` lifts, `unreadable`: a row of its spend
    today is not an amount, …; null when not held);
    `stepped_down_from`: its own model while it runs on its fallback (`model`).
    `groups`: each group of agents, what its closed calls spent today, its
    ceiling (null: none) and `in_flight_usd`, its calls in flight at their
    estimates (the most they may cost, not yet spent).
    `config_file`: the agents.yaml the plane read (null: it runs on the
    built-in defaults, and `config_looked` says where it looked for one)."""
    head = json.dumps(
        {
            "day": snapshot["day"],
            "store_unreachable_since": _iso(snapshot.get("store_unreachable_since")),
            "resets_at": _moment(snapshot["resets_at"]).isoformat(),
            "default_model": snapshot.get("default_model"),
            "default_limit_usd": _plain(snapshot.get("default_limit_usd")),
            "fleet_spend_today_usd": plain(_whole(snapshot)),
            "fleet_limit_usd": _plain(snapshot.get("fleet_limit_usd")),
            "config_file": snapshot.get("config_file"),
            "config_looked": snapshot.get("config_looked", []),
            "agents": [],
            "groups": [
                {
                    "name": g["name"],
                    "spend_today_usd": _plain(g.get("spend_today_usd", 0)),
                    "limit_usd": _plain(g.get("limit_usd")),
                    "agents": g.get("agents", []),
                    "in_flight_usd": _plain(g.get("in_flight_usd", 0)),
                }
                for g in snapshot.get("groups", [])
            ],
        },
        indent=2,
    )
    agents = [_agent(a) for a in snapshot["agents"]]  # each with every field
    if not agents:
        return head
    listed = "[\n    " + json.dumps(agents)[1:-1].replace(_NEXT, _NEXT_LINE) + "\n  ]"
    return head.replace(_NO_AGENTS, f'\n  "agents": {listed}', 1)


_NO_AGENTS = '\n  "agents": []'
"""Where the agents go in the head: its first such line (the groups' own
`agents` come after it, deeper; no JSON string holds an unescaped quote)."""
_NEXT = '}, {"name": '
"""Between two agents, in the list encoded in one call (an agent's fields
are flat, and inside a JSON string every quote is escaped: nowhere else)."""
_NEXT_LINE = '},\n    {"name": '


def _agent(a: dict[str, Any]) -> dict[str, Any]:
    """An agent's line of `plane status --json`: one a line, the list
    encoded by json's C encoder in one call (indenting each field was most
    of the command's CPU at 100,000 agents: Python's encoder does it; an
    encoder set up for each agent, half of what was left). `a` as it
    travels, its defaults left out: each field read with its default."""
    return {
        "name": a["name"],
        "model": a["model"],
        "state": a.get("status", ROW_DEFAULTS["status"]),
        "spend_today_usd": _plain(a.get("spend_today_usd", 0)),
        "limit_usd": _plain(a.get("limit_usd")),
        "waiting": a.get("waiting", 0),
        "resumes_at": _iso(a.get("resumes_at")),
        "price_known": a.get("price_known", True),
        "floor_priced": a.get("floor_priced", False),
        "burn_usd_per_hour": _plain(a.get("burn_usd_per_hour")),
        "reaches_ceiling_at": _iso(a.get("reaches_ceiling_at")),
        "hold_reason": a.get("hold_reason"),
        "stepped_down_from": a.get("stepped_down_from"),
    }


def status_text(snapshot: dict[str, Any]) -> str:
    """One line an agent; a held one says why (`held_for`) and, when the
    day's end frees it, when, as the TUI's title does (on the plane's clock,
    not this machine's). The last line says which agents.yaml the plane
    read, or where it looked."""
    lines = [_head(snapshot)]
    if (since := snapshot.get("store_unreachable_since")) is not None:
        lines.append(
            f"{store_unreachable(_moment(since))}: spend as last read; "
            "sends are refused until it is back."
        )
    agents = rows(snapshot)  # each with the fields its line left out
    width = max((len(a["name"]) for a in agents), default=0)
    members: dict[str, str] | None = None  # read once a group holds an agent
    for a in agents:
        limit = _amount(a.get("limit_usd"))
        ceiling = "no limit" if limit is None else f"of {usd_exact(limit)}"
        spent = _spent(a, limit)
        model = a["model"] if a.get("price_known", True) else f"{a['model']} ({UNPRICED})"
        if a.get("stepped_down_from"):
            model += " (fallback)"
        line = f"  {a['name']:<{width}}  {a['status']:<7}  {model}  {spent} {ceiling}"
        if a["status"] == "held":
            if a.get("hold_reason") == "group" and members is None:
                members = group_members(snapshot.get("groups", []))
            resumes = None
            if a.get("resumes_at") is not None:
                left = _moment(a["resumes_at"]) - _moment(snapshot["now"])
                resumes = f"resumes in {duration(left)}"
            said = held_for(
                a.get("hold_reason"), a["name"], (members or {}).get(a["name"]), resumes
            )
            line += f"  {said}" if said else ""
        elif limit is not None and (at := a.get("reaches_ceiling_at")) is not None:
            line += f"  {reaches(limit, _moment(at))}"
        lines.append(line)
    if not agents:
        lines.append("  No agents yet: `plane new NAME` creates one, or list them in agents.yaml.")
    config = config_said(snapshot.get("config_file"), snapshot.get("config_looked", []))
    return "\n".join([*lines, *_groups(snapshot.get("groups", [])), config])


def held_for(reason: str | None, agent: str, group: str | None, resumes: str | None) -> str:
    """Why a held agent is held and what lets it go on, as `plane status` and
    `plane show` say it: `a loop: ...`, `its ceiling: resumes in 6h 12m`,
    `group research's ceiling: ...`, `the fleet's ceiling: ...`. `resumes`:
    when the day's end frees it (None: it does not, as for a ceiling of
    $0.00, a pause; or an unpriced model, which only a price frees)."""
    if reason == "loop":
        return f"a loop: `plane resume {agent}` lets it go on"
    if reason == "unpriced":
        return "an unpriced model under a ceiling: a price in agents.yaml or no ceiling frees it"
    if reason == "unreadable":
        return "a row of its spend today is not an amount"
    whose = _CEILINGS.get(reason or "")
    if whose is None:  # a hold with no words of its own here
        return resumes or ""
    if reason == "group":
        whose = f"group {group}'s ceiling" if group else whose
    if resumes is None:
        return f"{whose} is $0.00: a pause until it is raised"
    return f"{whose}: {resumes}"


_CEILINGS = {
    "ceiling": "its ceiling",
    "group": "its group's ceiling",
    "fleet": "the fleet's ceiling",
}
"""Whose ceiling holds an agent, by `hold_reason`."""


def group_members(groups: list[dict[str, Any]]) -> dict[str, str]:
    """Each grouped agent's group, from the snapshot's groups (one agent is
    in one group)."""
    return {agent: g["name"] for g in groups for agent in g.get("agents", [])}


def _groups(groups: list[dict[str, Any]]) -> list[str]:
    """One line a group: its spend today against its ceiling, and its
    agents (the first of them, past a few: a group of 1,000 is one line)."""
    width = max((len(g["name"]) for g in groups), default=0)
    lines = []
    for g in groups:
        limit = _amount(g.get("limit_usd"))
        spent = spend_against(Decimal(str(g.get("spend_today_usd", 0))), limit)
        ceiling = "no limit" if limit is None else f"of {usd_exact(limit)}"
        ceiling += in_flight_apart(Decimal(str(g.get("in_flight_usd", 0))))
        lines.append(f"  group {g['name']:<{width}}  {spent} {ceiling}  {some_names(g['agents'])}")
    return lines


def _spent(agent: dict[str, Any], limit: Decimal | None) -> str:
    """Its spend as the TUI's row says it (`spend_priced`)."""
    return spend_priced(
        Decimal(str(agent.get("spend_today_usd", 0))),
        limit,
        price_known=agent.get("price_known", True),
        floor_priced=agent.get("floor_priced", False),
    )


def _head(snapshot: dict[str, Any]) -> str:
    """The day, and what it has cost so far, every agent together: the rows
    alone leave out agents deleted today, whose spend still counts."""
    head = f"{snapshot['day']} (UTC)"
    if not snapshot["agents"] and snapshot.get("fleet_spend_today_usd") is None:
        return head
    whole, ceiling = _whole(snapshot), _amount(snapshot.get("fleet_limit_usd"))
    unlisted = whole - _listed(snapshot)
    if ceiling is None:
        parts = [
            (Decimal(str(a.get("spend_today_usd", 0))), _amount(a.get("limit_usd")))
            for a in snapshot["agents"]
        ]
        head += f": {spend_total(parts, max(unlisted, Decimal(0)))} spent today"
    else:
        head += f": {spend_against(whole, ceiling)} of the fleet's {usd_exact(ceiling)} spent today"
    gone = _deleted(snapshot, unlisted)
    return head + (f" ({usd(gone)} of it by agents deleted today)" if gone > 0 else "")


def _deleted(snapshot: dict[str, Any], unlisted: Decimal) -> Decimal:
    """What agents deleted today spent: the plane's own sum of every agent's
    day, read with the rows, less the rows. Not the fleet's total less the
    rows: on a plane of a fleet the total is read from the store as it is
    now, and another plane's rows as of its last renewal, so their calls
    since would read as agents deleted. From an older plane, `unlisted`."""
    summed = _amount(snapshot.get("spend_today_usd"))
    return unlisted if summed is None else summed - _listed(snapshot)


def _listed(snapshot: dict[str, Any]) -> Decimal:
    return sum((Decimal(str(a.get("spend_today_usd", 0))) for a in snapshot["agents"]), Decimal(0))


def _whole(snapshot: dict[str, Any]) -> Decimal:
    """The fleet's spend today; from an older plane that does not say, the rows'."""
    whole = _amount(snapshot.get("fleet_spend_today_usd"))
    return _listed(snapshot) if whole is None else whole


def _amount(value: object) -> Decimal | None:
    """A Decimal as the wire carries it (a string), None as None."""
    return None if value is None else Decimal(str(value))


@functools.lru_cache(maxsize=1024)
def _plain(value: object) -> str | None:
    """An amount as `--json` writes it; the same few amounts recur row after
    row (`"0"`, each ceiling), so each is worked out once."""
    amount = _amount(value)
    return None if amount is None else plain(amount)


def _moment(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _iso(value: str | None) -> str | None:
    return None if value is None else _moment(value).isoformat()
