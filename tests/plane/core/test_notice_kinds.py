"""Every notice that says why an agent is stopped (or nears its ceiling) is
one a client can tell from a routine plane line (`notice_kind`): the TUI
draws those loudest. Held to the plane's own wording, so they cannot drift."""

from __future__ import annotations

from decimal import Decimal

import pytest

from plane.agents.worker import paused_notice
from plane.money import notices
from plane.money.limits import set_reply, standing
from plane.wire.words import notice_kind


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (notices.ceiling_reached("demo", Decimal(2), Decimal("2.01"), "3h 13m"), "held"),
        (notices.held("demo", Decimal(2), Decimal(2), "3h 13m"), "held"),
        (notices.held("demo", Decimal(2), Decimal("2.5"), "3h 13m"), "held"),
        (notices.held("demo", Decimal(0), Decimal(0), "3h 13m"), "paused"),
        (notices.paused("demo"), "paused"),
        (paused_notice("demo"), "paused"),
        (notices.unpriced("other-model"), "held"),
        (notices.warning("demo", Decimal(5), Decimal("4.10")), "warn"),
        (notices.spike("demo", Decimal("3.1"), Decimal("0.5"), 6.2, None), "warn"),
        ("Raised to $7.00 until 00:00 UTC from the alert.", None),
        (standing(Decimal("4.10"), Decimal(5)), None),
        (set_reply(Decimal("4.10"), Decimal(5)), None),
        ("Resumed by the operator: it answers what waited.", None),
    ],
)
def test_each_notice_is_told_apart_from_routine_lines(text: str, kind: str | None) -> None:
    assert notice_kind(text) == kind


async def test_the_plane_s_own_hold_notices_are_held_kinds(start_plane):
    """The gate's (an unpriced model, the fleet's ceiling) and the pause's,
    as the plane says them."""
    from tests.support.fixtures_plane import CONFIG

    plane = await start_plane(CONFIG.replace("  demo: {}", "  demo: {model: other-model}"))
    said = await plane.send("demo", "hello")
    assert [notice_kind(m.text) for m in said if m.kind == "plane"] == ["held"]
    for flying in (Decimal(0), Decimal("0.5"), None):  # spent, or with calls in flight
        fleet = plane.services.gate.fleet_notice("scout", Decimal(3), Decimal(2), flying)
        assert notice_kind(fleet) == "held"
    client = await plane.client()
    from plane.wire import protocol as p

    await client.request(p.PauseAgent(agent="scout", paused=True))
    history = await plane.services.conversation.history("scout", 5)
    assert notice_kind(history[-1].text) == "paused"
