"""Burn rate: an agent's pace from its settled calls, when it reaches its
ceiling at that pace (the row, `plane status`, `plane show`, `/metrics`, the
title), and a spike said once a day before amber, in the conversation and as
an alert with its figures. The estimator on its own with a clock the test
moves; the rest on a real plane. (Its accuracy on spend curves: bench/burn.py.)"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from prometheus_client.parser import text_string_to_metric_families

from plane.cli.manage import shown
from plane.clock import ManualClock
from plane.config import BurnConfig
from plane.money.burn import Burn
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from plane.wire.words import notice_kind
from tests.support.approving import HTTP, approving
from tests.support.command import plane_cli_async
from tests.support.fixtures_plane import CONFIG, RunningPlane
from tests.support.local_http import local_client

DAY = datetime(2026, 11, 29, tzinfo=UTC)
MIDNIGHT = DAY + timedelta(days=1)


@dataclass
class Clock:
    at: datetime = DAY

    def now(self) -> datetime:
        return self.at

    async def sleep_until(self, when: datetime) -> None:
        raise AssertionError("not in these tests")


def spend(burn: Burn, clock: Clock, start_h: float, end_h: float, per_hour: float) -> Decimal:
    """A call a minute from `start_h` to `end_h`, at `per_hour`; returns what it spent."""
    cost = Decimal(str(per_hour / 60))
    spent, minute = Decimal(0), start_h * 60
    while minute < end_h * 60:
        clock.at = DAY + timedelta(minutes=minute)
        burn.charged("a", clock.at, cost)
        spent += cost
        minute += 1
    return spent


def test_a_steady_pace_is_read_as_it_is_and_extrapolated():
    clock = Clock()
    burn = Burn(clock)
    spent = spend(burn, clock, 8, 11, 0.6)  # 3 hours at $0.60 an hour
    assert abs((burn.per_hour("a") or 0) - Decimal("0.60")) <= Decimal("0.02")
    at = burn.reaches("a", spent, Decimal(5), MIDNIGHT)
    truth = clock.at + timedelta(hours=float(Decimal(5) - spent) / 0.6)
    assert at is not None and abs((at - truth).total_seconds()) < 5 * 60


def test_a_spell_ten_minutes_old_is_read_at_its_pace_not_an_hours_average():
    clock = Clock()
    burn = Burn(clock)
    spend(burn, clock, 8, 8 + 10 / 60, 6.0)  # $6 an hour for ten minutes
    assert Decimal("5.5") <= (burn.per_hour("a") or 0) <= Decimal("6.5")


def test_nothing_is_said_without_a_pace_a_ceiling_or_a_day_to_reach_it_in():
    clock = Clock()
    burn = Burn(clock)
    assert burn.per_hour("a") is None
    for minute in (0, 1):  # two calls are not a pace
        clock.at = DAY + timedelta(hours=8, minutes=minute)
        burn.charged("b", clock.at, Decimal("0.1"))
    assert burn.reaches("b", Decimal("0.2"), Decimal(5), MIDNIGHT) is None
    spent = spend(burn, clock, 8, 9, 0.2)  # $0.20 an hour: $5.00 would come after midnight
    assert burn.reaches("a", spent, Decimal(5), MIDNIGHT) is None
    assert burn.reaches("a", spent, Decimal(50), MIDNIGHT) is None
    assert burn.reaches("a", spent, None, MIDNIGHT) is None
    assert burn.reaches("a", spent, Decimal(0), MIDNIGHT) is None  # a pause
    assert burn.reaches("a", spent, spent, MIDNIGHT) is None  # there already
    assert burn.reaches("a", spent, Decimal("2"), MIDNIGHT) is not None


def test_a_pause_starts_a_new_spell():
    """Yesterday's work does not slow today's pace: after two hours' quiet the
    spell starts again, so a burst this morning is read at its own pace."""
    clock = Clock()
    burn = Burn(clock)
    spend(burn, clock, 1, 2, 0.2)
    spend(burn, clock, 9, 9 + 15 / 60, 4.0)
    assert Decimal("3.5") <= (burn.per_hour("a") or 0) <= Decimal("4.5")


def test_a_spike_is_the_last_hour_far_above_the_day_and_over_the_floor():
    clock = Clock()
    burn = Burn(clock, BurnConfig(spike_ratio=4, spike_floor_usd_per_hour=Decimal(1)))
    today = DAY.date()
    spend(burn, clock, 0, 10, 0.1)
    assert burn.spike("a", today) is None  # steady
    spend(burn, clock, 10, 10.25, 2.0)
    assert burn.spike("a", today) is None  # under the floor still ($0.50 in the last hour)
    spend(burn, clock, 10.25, 11, 2.0)
    spike = burn.spike("a", today)
    assert spike is not None and spike.hour_usd >= 1 and spike.times >= 4
    burn.told("a", today)
    assert burn.spike("a", today) is None  # once a day
    assert burn.spike("a", date(2026, 11, 30)) is not None


def test_a_new_agent_working_hard_from_its_first_call_is_no_spike():
    """Its trailing rate is its own pace so far, not a day of nothing."""
    clock = Clock()
    burn = Burn(clock)
    spend(burn, clock, 9, 10, 3.0)
    assert burn.spike("a", DAY.date()) is None


async def test_a_forecast_on_show_moves_when_the_agent_stops_spending():
    """No call comes to show the row again: the watch does, each minute."""
    clock = ManualClock(DAY + timedelta(hours=8))
    burn = Burn(clock)
    for minute in range(30):
        burn.charged("a", DAY + timedelta(hours=8, minutes=minute - 30), Decimal("0.05"))
    first = burn.reaches("a", Decimal("1.5"), Decimal(5), MIDNIGHT)
    assert first is not None
    shown: list[str] = []

    async def publish(agent: str) -> None:
        shown.append(agent)
        burn.reaches(agent, Decimal("1.5"), Decimal(5), MIDNIGHT)

    watching = asyncio.create_task(burn.watch(publish))
    await asyncio.sleep(0)
    await clock.advance(timedelta(minutes=20))  # the pace decays: it reaches later
    for _ in range(100):
        if shown:
            break
        await asyncio.sleep(0.01)
    watching.cancel()
    assert shown == ["a"]


# ── on a real plane ─────────────────────────────────────────────────────────


async def steady_turns(plane: RunningPlane, turns: int, cost_tokens: int = 50) -> None:
    """`turns` turns five minutes apart, $0.05 each at the test prices."""
    for _ in range(turns):
        plane.llm.reply("ok", usage=Usage(input_tokens=cost_tokens))
        await plane.turn("demo", "go on")
        await plane.clock.advance(timedelta(minutes=5))


async def test_the_row_status_show_and_metrics_say_when_the_ceiling_is_reached(start_plane):
    plane = await start_plane(http=HTTP)
    await steady_turns(plane, 4)  # $0.20 by 12:15, now 12:20
    demo = await plane.rows.state("demo")
    assert demo.burn_usd_per_hour is not None and demo.reaches_ceiling_at is not None
    assert datetime(2026, 11, 29, 13, 0, tzinfo=UTC) <= demo.reaches_ceiling_at
    assert demo.reaches_ceiling_at <= datetime(2026, 11, 29, 14, 0, tzinfo=UTC)
    said = f"reaches $1.00 at {demo.reaches_ceiling_at:%H:%M} UTC at this rate"

    status = await plane_cli_async(plane.home.root, "status")
    [line] = [line for line in status.stdout.splitlines() if "demo" in line]
    assert line.endswith(f"$0.20 of $1.00  {said}")
    listed = json.loads((await plane_cli_async(plane.home.root, "status", "--json")).stdout)
    [row] = [a for a in listed["agents"] if a["name"] == "demo"]
    assert row["reaches_ceiling_at"] == demo.reaches_ceiling_at.isoformat()
    assert Decimal(row["burn_usd_per_hour"]) == demo.burn_usd_per_hour
    details = await (await plane.client()).request(p.ShowAgent(agent="demo"))
    assert isinstance(details, p.ShowAgentReply)
    assert f"  pace       ${demo.burn_usd_per_hour:.2f} an hour · {said}" in shown(details)

    async with local_client() as client:
        answer = await client.get(
            f"http://127.0.0.1:{plane.plane.http_port}/metrics",
            headers={"Authorization": f"Bearer {plane.token}"},
        )
    got = {
        (s.name, tuple(s.labels.items())): s.value
        for family in text_string_to_metric_families(answer.text)
        for s in family.samples
    }
    left = (demo.reaches_ceiling_at - plane.clock.now()).total_seconds()
    assert got["plane_agent_reaches_ceiling_in_seconds", (("agent", "demo"),)] == left
    assert got["plane_agent_burn_usd_per_hour", (("agent", "demo"),)] == float(
        demo.burn_usd_per_hour
    )
    assert ("plane_agent_reaches_ceiling_in_seconds", (("agent", "scout"),)) not in got


@pytest.mark.usefixtures("each_store")
async def test_the_pace_survives_a_restart(start_plane):
    plane = await start_plane()
    await steady_turns(plane, 4)
    before = await plane.rows.state("demo")
    plane = await start_plane(restart=plane)
    after = await plane.rows.state("demo")
    assert after.burn_usd_per_hour is not None and before.burn_usd_per_hour is not None
    # read back a sum a minute: within a few cents an hour of the live reading
    assert abs(after.burn_usd_per_hour - before.burn_usd_per_hour) <= Decimal("0.1")
    assert after.reaches_ceiling_at is not None


@pytest.mark.usefixtures("each_store")
async def test_calls_made_within_a_minute_still_make_a_pace_after_a_restart(start_plane):
    """A restart reads the day back a sum a minute: three calls in one
    minute are three calls, not one, so the forecast is still said."""
    plane = await start_plane()
    for _ in range(3):
        plane.llm.reply("ok", usage=Usage(input_tokens=50))
        await plane.turn("demo", "go on")
    before = await plane.rows.state("demo")
    assert before.reaches_ceiling_at is not None
    plane = await start_plane(restart=plane)
    after = await plane.rows.state("demo")
    assert after.reaches_ceiling_at is not None, "its pace read back is three calls"


SPIKY = CONFIG.replace("  limitUsd: 1\n", "  limitUsd: 5\n") + (
    "burn:\n  spike_floor_usd_per_hour: 0.5\n"
)


async def test_a_spike_is_said_once_before_amber_and_alerted_with_its_figures(
    start_plane, receiver
):
    config = approving(receiver).replace(CONFIG, SPIKY)
    plane = await start_plane(config, clock=ManualClock(DAY + timedelta(minutes=30)))
    for _ in range(11):  # $0.005 an hour, 00:30 to 10:30
        plane.llm.reply("ok", usage=Usage(input_tokens=5))
        await plane.turn("demo", "tick")
        await plane.clock.advance(timedelta(hours=1))
    said: list[p.ConversationMessage] = []
    for _ in range(4):  # then $0.25 every 3 minutes: $5 an hour
        plane.llm.reply("ok", usage=Usage(input_tokens=250))
        said += await plane.turn("demo", "go")
        await plane.clock.advance(timedelta(minutes=3))
    spikes = [m for m in said if m.kind == "plane" and notice_kind(m.text) == "warn"]
    assert len(spikes) == 1
    assert spikes[0].text.startswith("demo is spending $")
    assert " an hour over the last hour, " in spikes[0].text
    await receiver.until_hook("spike")
    [hook] = [h for h in receiver.hooks() if h["event"] == "spike"]
    assert hook["text"] == spikes[0].text
    assert Decimal(hook["last_hour_usd_per_hour"]) >= 4 * Decimal(hook["past_day_usd_per_hour"])
    assert ("plane: demo is burning fast", spikes[0].text) in receiver.topics()
    assert Decimal(hook["spend_today_usd"] or 0) < Decimal(4)  # before amber ($4.00)


async def test_a_title_on_course_for_the_ceiling_says_when():
    from tests.tui.conftest import feed, settle
    from tests.tui.factories import agent, snapshot
    from tests.tui.test_live import SIZE, title
    from tui.app import PlaneApp

    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        at = datetime(2025, 3, 14, 22, 5, tzinfo=UTC)
        feed(app, snapshot(agent("demo", "3", reaches_ceiling_at=at)))
        await settle(pilot)
        assert title(app) == (
            "demo · smollm2-135m · $3.00 of $5.00 today · reaches $5.00 at 22:05 UTC at this rate"
        )
