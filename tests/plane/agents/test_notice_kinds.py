"""Every notice that says why an agent is stopped (or nears its ceiling) is
one a client can tell from a routine plane line (`notice_kind`): the TUI
draws those loudest. Held to the plane's own wording, so they cannot drift."""

from __future__ import annotations

import inspect
import re
from dataclasses import replace
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from plane.agents import notices
from plane.agents.guard import Loop, LoopKind
from plane.agents.roster import AgentSpec
from plane.agents.session import Saved
from plane.money.budgets import FleetFull, GroupFull, TagFull
from plane.money.gate import AboveAgent
from plane.money.ledger import Interrupted
from plane.money.limits import set_reply, standing
from plane.wire.words import notice_kind

LOOPS: tuple[tuple[LoopKind, tuple[str, ...]], ...] = (
    ("round", ("grep a", "grep b")),
    ("answer", ("Nothing new.",)),
    ("request", ()),
    ("stall", ()),
)
"""The other kinds of loop, each with what repeated."""
LOOP = Loop("tool", 5, Decimal("0.12"), datetime(2026, 11, 29, 12, 0, tzinfo=UTC), ("grep x",))
SPEC = AgentSpec("demo", "scripted-model", "scripted", "", None, Path("w"), None)
SPENT = Decimal("4.10")
CUT = Interrupted(2, Decimal("0.04"))
NOTICES: dict[str, tuple[str, str | None]] = {
    "ceiling_reached": (notices.ceiling_reached("demo", Decimal(2), Decimal("2.01"), "3h"), "held"),
    "held": (notices.held("demo", Decimal(2), Decimal("2.5"), "3h 13m"), "held"),
    "clock_behind": (notices.clock_behind(date(2026, 11, 28), date(2026, 11, 29)), None),
    "above_agent": (notices.above_agent("demo", FleetFull(SPENT, SPENT), "3h"), "held"),
    "unpriced_held": (notices.unpriced_held("demo", "other-model"), "held"),
    "paused_above": (notices.paused_above("demo", FleetFull(SPENT, Decimal(0))), "paused"),
    # A gateway agent's call that does not fit: calls that fit still go, so it is not held.
    "too_dear": (notices.too_dear("demo", Decimal(1), Decimal("0.5"), Decimal(2), "3h"), None),
    "in_flight": (notices.in_flight("demo", SPENT, SPENT, SPENT, SPENT, 5), None),
    "may_overshoot": (notices.may_overshoot("demo", SPENT, SPENT, 5), None),
    "paused": (notices.paused("demo"), "paused"),
    "paused_by_operator": (notices.paused_by_operator("demo"), "paused"),
    "warning": (notices.warning("demo", Decimal(5), SPENT), "warn"),
    "unpriced": (notices.unpriced("other-model"), "held"),
    "spike": (notices.spike("demo", Decimal("3.1"), Decimal("0.5"), 6.2, None), "warn"),
    "raised": (notices.raised(Decimal(7)), None),
    "declined": (notices.declined(Decimal(7)), None),
    "TURN_FAILED": (notices.TURN_FAILED, None),
    "CUT_OFF": (notices.CUT_OFF, None),
    "BREAKER": (notices.BREAKER, None),
    "unrecorded": (notices.unrecorded(Exception("The disk refused.")), None),
    "failed": (notices.failed("The provider refused."), None),
    "broken": (notices.broken("The reply broke off."), None),
    "capped": (notices.capped(8), None),
    "cut_mark": (notices.cut_mark(256), None),
    "echoed": (notices.echoed("demo"), None),
    "empty": (notices.empty("demo"), None),
    "summarised": (notices.summarised(Path("t.jsonl")), None),
    "overflowed": (notices.overflowed(SPEC, 4096, Saved(3, "t.jsonl")), None),
    "too_large": (notices.too_large(SPEC, 90_000, 25_000, 4096, 3000), None),
    "interrupted": (notices.interrupted(SPENT, CUT), None),
    "unpriced_cut": (notices.unpriced_cut("other-model", CUT), None),
    "cut_by_a_stop": (notices.cut_by_a_stop(CUT, 1), None),
    "gateway_agent": (notices.gateway_agent("claude"), None),
    "scout_asked": (notices.scout_asked("demo", "where?", []), None),
    "RESUMED": (notices.RESUMED, None),
    "RESUMED_HELD": (notices.RESUMED_HELD, None),
    "looping": (notices.looping("demo", LOOP), "held"),
    "loop_resumed": (notices.loop_resumed(gateway=False), None),
    "stepped_down": (
        notices.stepped_down("demo", "other-model", SPENT, Decimal(5), 0.8),
        "warn",
    ),
    "back_on": (notices.back_on("demo", "scripted-model", SPENT, Decimal(10), 0.8), None),
    "paused_now": (notices.paused_now(Decimal(2), working=True), "paused"),
    "edited": (notices.edited("other-model", None, "keep", "keep"), None),
    "renamed": (notices.renamed("poet"), None),
    "deleted": (notices.deleted(SPENT), None),
}
"""Every sentence of plane/agents/notices.py, and its kind."""


@pytest.mark.parametrize(("text", "kind"), NOTICES.values(), ids=list(NOTICES))
def test_each_notice_is_told_apart_from_routine_lines(text: str, kind: str | None) -> None:
    assert notice_kind(text) == kind


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (notices.held("demo", Decimal(2), Decimal(2), "3h 13m"), "held"),
        (notices.held("demo", Decimal(0), Decimal(0), "3h 13m"), "paused"),
        (notices.paused_now(None, working=False), "paused"),
        # A group holds every agent in it, as the fleet does: the loudest kind.
        (notices.above_agent("demo", GroupFull(SPENT, SPENT, "research"), "3h"), "held"),
        # A tag holds its calls, not the agent: the agent answers calls without it.
        (notices.above_agent("demo", TagFull(SPENT, SPENT, "t-1"), "3h"), None),
        # A ceiling of zero above the agent's is a pause; a tag's pauses only its calls.
        (notices.above_agent("demo", GroupFull(SPENT, Decimal(0), "r"), "3h"), "paused"),
        (notices.above_agent("demo", TagFull(SPENT, Decimal(0), "t-1"), "3h"), None),
        (notices.unpriced_held("demo", "other-model", "group", "research"), "held"),
        (notices.unpriced_held("demo", "other-model", "fleet"), "held"),
        *[
            (notices.looping("demo", replace(LOOP, kind=kind, what=what)), "held")
            for kind, what in LOOPS
        ],
        (notices.loop_resumed(gateway=True), None),
        (notices.overflowed(SPEC, 4096, None, 5000), None),
        (standing(SPENT, Decimal(5)), None),
        (set_reply(SPENT, Decimal(5)), None),
    ],
)
def test_the_other_forms_and_the_limit_replies_too(text: str, kind: str | None) -> None:
    assert notice_kind(text) == kind


def test_every_notice_of_the_plane_is_in_the_table() -> None:
    """A notice added to plane/agents/notices.py without a kind here fails."""
    functions = {
        name
        for name, value in vars(notices).items()
        if inspect.isfunction(value) and value.__module__ == notices.__name__
    }
    named = re.findall(r"^([A-Z_]+) = ", inspect.getsource(notices), re.MULTILINE)
    sentences = {name for name in named if isinstance(getattr(notices, name), str)}
    assert functions | sentences == set(NOTICES) | {"why", "whose_ceiling"}


async def test_the_plane_s_own_hold_notices_are_held_kinds(start_plane):
    """The gate's (an unpriced model, the fleet's ceiling) and the pause's,
    as the plane says them."""
    from tests.support.fixtures_plane import CONFIG

    plane = await start_plane(CONFIG.replace("  demo: {}", "  demo: {model: other-model}"))
    said = await plane.send("demo", "hello")
    assert [notice_kind(m.text) for m in said if m.kind == "plane"] == ["held"]
    hold = AboveAgent("scout", FleetFull(Decimal(3), Decimal(2)), plane.clock.now())
    assert notice_kind(notices.why(hold, plane.clock.now())) == "held"
    client = await plane.client()
    from plane.wire import protocol as p

    await client.request(p.PauseAgent(agent="scout", paused=True))
    history = await plane.services.conversation.history("scout", 5)
    assert notice_kind(history[-1].text) == "paused"
