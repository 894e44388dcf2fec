"""Attack: a fleet's ceiling flapping around its line — set under the
fleet's spend and lifted again, five times over — on a real plane of 200
agents alerting a real local receiver. Each flap holds and frees every
agent; the operator's phone gets one alert for the hold, then, once a
minute has passed on the plane's clock, one for where it stands then, not
an alert an agent a flap (before: 2,000 of each, most of them more than
the receivers' queues took, written to the log as not sent)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from plane.wire.protocol import Usage
from tests.support.fleet_alerts import fleet_config, names, until_rows

pytestmark = pytest.mark.slow

FLEET = 200
FLAPS = 5


async def test_a_fleet_ceiling_flapping_alerts_once_a_minute(start_plane, receiver, caplog):
    plane = await start_plane(fleet_config(receiver, FLEET))
    notifier = plane.runtime.notifier
    assert notifier is not None
    plane.llm.reply("done", usage=Usage(input_tokens=200))
    await plane.turn("a000", "spend")
    subscription = plane.bus.subscribe()
    for _ in range(FLAPS):
        await plane.send("a001", "/limit fleet 0.10")
        await until_rows(subscription, names(FLEET), lambda row: row.status == "held")
        await receiver.until_hook("held")
        await plane.send("a001", "/limit fleet off")
        await until_rows(subscription, names(FLEET), lambda row: row.status != "held")
    await notifier.drained()
    assert [(h["event"], h["count"]) for h in receiver.hooks()] == [("held", FLEET)]
    await plane.clock.advance(timedelta(minutes=1))
    await receiver.until_hook("resumed")
    await notifier.drained()
    assert [(h["event"], h["count"]) for h in receiver.hooks()] == [
        ("held", FLEET),
        ("resumed", FLEET),
    ]
    assert len(receiver.topics()) == 2
    assert not [r for r in caplog.records if "not sent" in r.getMessage()]
