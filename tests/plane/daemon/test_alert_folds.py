"""One event, one alert: a real plane of 200 agents, alerting a real local
receiver (webhook and ntfy), held all at once by the fleet's ceiling or a
group's, and freed all at once by the day turning, sends one alert naming
the cause and how many agents, not one an agent (before, 200 pushes; at
2,000 agents, half of them more than the receivers' queues took)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_plane import RunningPlane
from tests.support.fleet_alerts import fleet_config, names, until_rows

FLEET = 200
LISTED = ", ".join(names(20))
"""The agents a folded alert names, the rest counted (`some_names`)."""


async def spent_then(
    plane: RunningPlane, receiver: Receiver, command: str, fleet: int = FLEET
) -> None:
    """a000 spends $0.20, then the operator types `command` (a ceiling over
    many agents, of a fleet of `fleet`); until its alert has arrived, and
    every alert queued is sent."""
    plane.llm.reply("done", usage=Usage(input_tokens=200))
    await plane.turn("a000", "spend")
    subscription = plane.bus.subscribe()
    await plane.send("a001", command)
    await until_rows(subscription, names(fleet), lambda row: row.status in ("held", "working"))
    await receiver.until_hook("held")
    assert plane.runtime.notifier is not None
    await plane.runtime.notifier.drained()


async def test_the_fleets_ceiling_holding_every_agent_is_one_alert(start_plane, receiver):
    plane = await start_plane(fleet_config(receiver, FLEET))
    await spent_then(plane, receiver, "/limit fleet 0.10")
    [held] = receiver.hooks()
    assert (held["event"], held["count"], held["cause"], held["group"]) == (
        "held",
        200,
        "fleet",
        None,
    )
    assert held["text"] == (
        f"the fleet is held: 200 agents take no new turn ({LISTED}, and 180 more). $0.20 spent "
        "today by the fleet, of $0.10 a day. They answer at 00:00 UTC, in 12h 00m, or when the "
        "fleet limit is raised."
    )
    assert held["agents"] == names(20) and held["agent"] == "a000"
    assert (held["spend_today_usd"], held["limit_usd"]) == ("0.2", "0.1")
    assert held["resumes_at"] == "2026-11-30T00:00:00+00:00"
    assert "actions" not in held, "a link raises one agent's ceiling, not the fleet's"
    assert receiver.topics() == [("plane: the fleet is held", held["text"])]


async def test_the_operators_fleet_pause_is_one_alert_as_an_agents_is(start_plane, receiver):
    """`/limit 0` on one agent alerts once (it is held); on the fleet, once too."""
    plane = await start_plane(fleet_config(receiver, FLEET))
    await spent_then(plane, receiver, "/limit fleet 0")
    assert [h["text"] for h in receiver.hooks()] == [
        f"the fleet is paused: its daily ceiling is $0.00, so 200 agents take no turn ({LISTED}, "
        "and 180 more) until the fleet limit is raised (/limit fleet 5, or /limit fleet off); a "
        "new day does not end a pause."
    ]


async def test_a_groups_ceiling_holding_its_agents_is_one_alert(start_plane, receiver):
    plane = await start_plane(fleet_config(receiver, FLEET + 50, group=FLEET))
    await spent_then(plane, receiver, "/limit group research 0.10")
    [held] = receiver.hooks()
    assert (held["event"], held["count"], held["cause"], held["group"]) == (
        "held",
        200,
        "group",
        "research",
    )
    assert held["text"] == (
        f"group research is held: 200 agents take no new turn ({LISTED}, and 180 more). $0.20 "
        "spent today by group research, of $0.10 a day. They answer at 00:00 UTC, in 12h 00m, "
        "or when the group limit is raised."
    )
    assert receiver.topics() == [("plane: group research is held", held["text"])]


async def test_midnight_freeing_every_agent_is_one_alert(start_plane, receiver):
    plane = await start_plane(fleet_config(receiver, FLEET))
    await spent_then(plane, receiver, "/limit fleet 0.10")
    await plane.clock.advance(timedelta(hours=12))  # 00:00 UTC
    await receiver.until_hook("resumed")
    assert plane.runtime.notifier is not None
    await plane.runtime.notifier.drained()
    [resumed] = [h for h in receiver.hooks() if h["event"] == "resumed"]
    assert (resumed["count"], resumed["cause"], resumed["agents"]) == (200, "day", names(20))
    assert resumed["text"] == (
        "200 agents have resumed at 00:00 UTC, the new day's spend starting from $0.00 "
        f"({LISTED}, and 180 more)."
    )
    assert receiver.topics()[-1] == ("plane: 200 agents resumed", resumed["text"])


@pytest.mark.slow
async def test_the_fleets_ceiling_lifted_is_one_alert_a_minute_after_its_hold(
    start_plane, receiver
):
    """Its resume is told once the minute since its hold has passed on the
    plane's clock: a ceiling is told at most once a minute."""
    plane = await start_plane(fleet_config(receiver, FLEET))
    await spent_then(plane, receiver, "/limit fleet 0.10")
    subscription = plane.bus.subscribe()
    await plane.send("a001", "/limit fleet off")
    await until_rows(subscription, names(FLEET), lambda row: row.status != "held")
    await plane.clock.advance(timedelta(minutes=1))
    await receiver.until_hook("resumed")
    assert [(h["event"], h["count"], h["cause"]) for h in receiver.hooks()] == [
        ("held", 200, "fleet"),
        ("resumed", 200, "fleet"),
    ]
    assert receiver.hooks()[-1]["text"] == (
        f"200 agents held by the fleet's ceiling have resumed ({LISTED}, and 180 more). "
        "$0.20 spent today by the fleet, against no limit."
    )


def test_agents_a_ceiling_holds_after_its_alert_are_said_as_more():
    """A busy fleet's agents finish their turns one by one after its ceiling
    is reached: those held after the alert are told a minute later, as more."""
    from plane.daemon.alert_folds import Cause, Standing, held_text

    standing = Standing(Decimal("10.02"), Decimal(10))
    assert held_text(Cause("fleet"), ["a007"], standing, "3h 10m", more=True) == (
        "the fleet is held: 1 more agent takes no new turn (a007). $10.02 spent today by the "
        "fleet, of $10.00 a day. They answer at 00:00 UTC, in 3h 10m, or when the fleet limit "
        "is raised."
    )
    assert held_text(Cause("group", "research"), ["a001", "a002"], None, "") == (
        "group research is held: 2 agents take no new turn (a001, a002). They answer when the "
        "group limit is raised."
    )


@pytest.mark.parametrize(
    ("command", "group", "whose"),
    [
        ("/limit fleet 5", 0, ("the fleet's", "/limit fleet off")),
        ("/limit group research 5", FLEET, ("group research's", "/limit group research off")),
    ],
)
async def test_a_ceiling_that_cannot_count_a_model_with_no_price_is_one_alert(
    start_plane, receiver, command, group, whose
):
    """Agents with no ceiling of their own, on a model with no price: a
    fleet's or a group's ceiling set holds them all at once (their turns
    cannot be counted), and a price for the model frees them all: one cause
    (before, 200 pushes)."""
    own = "limitUsd: 5\n  provider: scripted\n  model: scripted-model"
    config = fleet_config(receiver, FLEET, group=group).replace("    limitUsd: 100\n", "")
    plane = await start_plane(config.replace(own, "provider: scripted\n  model: other-model"))
    subscription = plane.bus.subscribe()
    await plane.send("a001", command)
    await until_rows(subscription, names(FLEET), lambda row: row.hold_reason == "unpriced")
    await receiver.until_hook("held")
    assert plane.runtime.notifier is not None
    await plane.runtime.notifier.drained()
    [held] = receiver.hooks()
    assert (held["event"], held["count"], held["cause"]) == (
        "held",
        200,
        "group" if group else "fleet",
    )
    ceiling, lift = whose
    assert held["text"] == (
        f"{ceiling} ceiling cannot count other-model, which has no price: 200 agents take no "
        f"turn ({LISTED}, and 180 more) until other-model has a price under `pricing:` in "
        f"agents.yaml ({lift} lifts the ceiling)."
    )


@pytest.mark.slow  # 1.6 s alone
async def test_an_agent_left_held_by_its_own_ceiling_when_the_fleets_lifts_is_told(
    start_plane, receiver
):
    """Three agents held by the fleet's ceiling, one of them also over a
    ceiling of its own: when the fleet's is lifted, the two it frees are one
    `resumed` alert and the one still held is told held by its own, not left
    silent behind the fleet's alert as if it answered again."""
    plane = await start_plane(fleet_config(receiver, 3))
    await spent_then(plane, receiver, "/limit fleet 0.10", fleet=3)
    await plane.send("a000", "/limit 0.15")  # under the $0.20 it spent
    subscription = plane.bus.subscribe()
    await plane.send("a001", "/limit fleet off")
    await until_rows(subscription, ["a001", "a002"], lambda row: row.status != "held")
    await plane.clock.advance(timedelta(minutes=1))  # a ceiling is told once a minute
    await receiver.until_hook("resumed")
    await receiver.until_hook("held", count=2)
    assert plane.runtime.notifier is not None
    await plane.runtime.notifier.drained()
    told = [(h["event"], h["cause"], h["count"], h["agent"]) for h in receiver.hooks()]
    assert sorted(told) == [
        ("held", "agent", 1, "a000"),
        ("held", "fleet", 3, "a000"),
        ("resumed", "fleet", 2, "a001"),
    ]
    [own] = [h for h in receiver.hooks() if h["cause"] == "agent"]
    assert own["text"].startswith("a000 is held: $0.20 spent today, of $0.15 a day."), own["text"]


@pytest.mark.slow
async def test_an_agent_paused_while_a_ceiling_holds_it_is_not_said_to_resume(
    start_plane, receiver
):
    """Three agents held by the fleet's ceiling, one of them then paused by
    the operator: paused, it still takes no turn, so when the fleet's
    ceiling is lifted the `resumed` alert names the two it frees, not the
    one the pause keeps quiet (before, `3 agents … have resumed`)."""
    plane = await start_plane(fleet_config(receiver, 3))
    await spent_then(plane, receiver, "/limit fleet 0.10", fleet=3)
    client = await plane.client()
    await client.request(p.PauseAgent(agent="a000", paused=True))
    subscription = plane.bus.subscribe()
    await plane.send("a001", "/limit fleet off")
    await until_rows(subscription, ["a001", "a002"], lambda row: row.status != "held")
    await plane.clock.advance(timedelta(minutes=1))  # a ceiling is told once a minute
    await receiver.until_hook("resumed")
    assert plane.runtime.notifier is not None
    await plane.runtime.notifier.drained()
    told = [(h["event"], h["cause"], h["agents"]) for h in receiver.hooks()]
    assert told == [
        ("held", "fleet", ["a000", "a001", "a002"]),
        ("resumed", "fleet", ["a001", "a002"]),
    ]
