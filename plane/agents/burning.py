"""A spike in an agent's spend, said once a day before amber: in its
conversation and to the alerts (`spiked`). The figures are the burn
rate's (`plane.money.burn`); only when to say it is decided here."""

from __future__ import annotations

from collections.abc import Callable

from plane.agents import notices
from plane.agents.services import Services
from plane.money.burn import Spike
from plane.money.limits import spend_level

Spiked = Callable[[str, str, Spike], None]
"""Told (agent, what its conversation was told, the figures) of a spike in
its spend (the alerts')."""


async def tell_spike(services: Services, agent: str, spiked: Spiked | None = None) -> None:
    """After a call settled: say a spike, if this is one and the first today.
    Not once amber: the amber notice (and its alert) has said it already."""
    day = await services.ledger.today()
    spike = services.burn.spike(agent, day)
    if spike is None:
        return
    spent = await services.ledger.spend_today(agent)
    ceiling = services.gate.ceilings.of(agent)
    if spend_level(spent, ceiling, services.config.defaults.warn_ratio) != "ok":
        return
    first = await services.conversation.first_today(agent, "spike", day)
    services.burn.told(agent, day)
    if not first:
        return
    reaches_at = services.burn.reaches(agent, spent, ceiling, services.gate.resets_at())
    said = notices.spike(agent, spike.hour_usd, spike.day_usd, spike.times, reaches_at)
    await services.add_message(agent, "plane", said)
    if spiked is not None:
        spiked(agent, said, spike)
