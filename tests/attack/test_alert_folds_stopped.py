"""Attack: the plane stopped (`plane stop`) while a fold of many agents is
gathering its rows or waiting out its minute (`AGAIN`): its alert was
cancelled with it, neither sent nor written to the log, though an alert
not sent is written there with its sentence (before: nothing at all)."""

from __future__ import annotations

from plane.wire.protocol import Usage
from tests.support.fleet_alerts import fleet_config, names, until_rows

FLEET = 20


async def test_a_folds_alert_the_plane_stopped_before_it_was_told_is_logged(
    start_plane, receiver, caplog
):
    plane = await start_plane(fleet_config(receiver, FLEET))
    plane.llm.reply("done", usage=Usage(input_tokens=200))
    await plane.turn("a000", "spend")
    subscription = plane.bus.subscribe()
    await plane.send("a001", "/limit fleet 0.10")
    await until_rows(subscription, names(FLEET), lambda row: row.status == "held")
    await receiver.until_hook("held")
    await plane.send("a001", "/limit fleet off")  # told a minute after the hold, at the earliest
    await until_rows(subscription, names(FLEET), lambda row: row.status != "held")
    await plane.stop()
    assert [h["event"] for h in receiver.hooks()] == ["held"]
    logged = [r.getMessage() for r in caplog.records if "not sent" in r.getMessage()]
    assert logged == [
        "alert not sent (the plane stopped): 20 agents held by the fleet's ceiling have resumed"
        f" ({', '.join(names(FLEET))})."
    ]
