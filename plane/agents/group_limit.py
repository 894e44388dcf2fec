"""`/limit group [NAME [AMOUNT|off]]`: a group's ceiling, the operator's.

A group's ceiling is every member's, so only the operator sets it: typed
in any conversation (or `plane send AGENT "/limit group …"`); an agent's
own ask for it is refused with the line the operator would type
(`plane.agents.commands.ask_limit`).
"""

from __future__ import annotations

from decimal import Decimal

from plane.agents.services import Services
from plane.money.limits import BadLimit, group_set_reply, group_standing, parse_group_limit
from plane.wire.words import spend_against, usd, usd_exact


async def group_limit(services: Services, arg: str) -> str:
    """The groups' standing, one group's, or its ceiling set or removed."""
    groups = services.gate.ceilings.groups
    words = arg.split(None, 1)
    if not words:
        return await _all(services)
    name, value = words[0], words[1].strip() if len(words) > 1 else ""
    if not groups.exists(name):
        known = ", ".join(groups.names())
        where = f"Groups: {known}." if known else "There are no groups (groups: in agents.yaml)."
        raise BadLimit(f"{name[:40]} is not a group. {where}")
    spend = await services.ledger.budget_spend.groups_today()
    spent, in_flight = spend.spent.get(name, Decimal(0)), spend.in_flight.get(name, Decimal(0))
    if not value:
        return group_standing(name, spent, groups.ceiling(name), in_flight)
    parsed = parse_group_limit(name, value)  # BadLimit: refused (run_command)
    await services.gate.ceilings.set_group(name, parsed.usd)
    return group_set_reply(name, spent, parsed.usd, in_flight)


async def _all(services: Services) -> str:
    """`/limit group`: each group's spend today against its ceiling."""
    groups = services.gate.ceilings.groups
    if not groups.names():
        return "There are no groups (groups: in agents.yaml)."
    said = []
    spent_by_group = (await services.ledger.budget_spend.groups_today()).spent
    for name in groups.names():
        spent = spent_by_group.get(name, Decimal(0))
        ceiling = groups.ceiling(name)
        if ceiling is None:
            said.append(f"{name} {usd(spent)}, against no limit")
        else:
            said.append(f"{name} {spend_against(spent, ceiling)} of {usd_exact(ceiling)}")
    return f"Groups today: {'; '.join(said)}."
