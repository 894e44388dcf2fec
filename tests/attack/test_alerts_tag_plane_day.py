"""Attack: a tag's ceiling alert, once a day, was counted by the clock's
date, not by the plane's day its refusals are counted on. The plane's day
never goes back: a clock stepped back across 00:00 UTC reads the day before
while the ledger counts the new one. A refusal at 23:59:50 by the clock
(the plane's new day) was told, and the next, ten seconds after 00:00 by
the clock, the same day for the ledger, was told again as if a new day's.
One real plane, its gateway on a real port, alerting one real receiver."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from plane.clock import ManualClock
from plane.gateway.keys import Keys
from plane.wire.protocol import Usage
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_gateway import CONFIG as GATEWAY
from tests.support.fixtures_plane import launch
from tests.support.fleet_alerts import drained
from tests.support.gateway_planes import ASKED, call
from tests.support.scripted_llm import Reply, ScriptedLLM

pytestmark = pytest.mark.timeout(60)

NEW_DAY = datetime(2026, 11, 30, 0, 0, 10, tzinfo=UTC)
"""10 s into the plane's new day."""
TAG = {"x-plane-tag": "ticket-7"}


def config(receiver: Receiver, llm: ScriptedLLM) -> str:
    """The gateway agents, the tag ticket-7 of $0.10 a day, alerting `receiver`."""
    return (
        GATEWAY.replace("{anthropic_url}", llm.anthropic_url)
        + "tags:\n  ticket-7: {limitUsd: 0.1}\n"
        + f"notify:\n  webhook: {receiver.url}/hook\n  retries: 0\n"
    )


async def test_a_tags_refusals_of_one_plane_day_are_one_alert_across_the_clocks_midnight(
    tmp_path: Path, scripted_llm: ScriptedLLM, receiver: Receiver
):
    clock = ManualClock(NEW_DAY)
    plane = await launch(
        tmp_path, scripted_llm, config(receiver, scripted_llm), clock, http=("127.0.0.1", 0)
    )
    try:
        key = Keys(plane.home.gateway_keys).make("aider")
        scripted_llm.default_reply = Reply("ok", Usage(input_tokens=200))  # $0.20
        assert (await call(plane, key, ASKED, TAG)).status_code == 200
        await clock.set(NEW_DAY - timedelta(seconds=20))  # the clock steps back: 23:59:50
        assert (await call(plane, key, ASKED, TAG)).status_code == 400
        await receiver.until_hook("tag")
        await clock.set(NEW_DAY + timedelta(seconds=10))  # 00:00:20: the same plane day
        assert (await call(plane, key, ASKED, TAG)).status_code == 400
        await drained(plane)
    finally:
        scripted_llm.hang_up()
        await plane.stop()
    told = [h for h in receiver.hooks() if h["event"] == "tag"]
    assert [(h["tag"], h["spend_today_usd"]) for h in told] == [("ticket-7", "0.2")]
