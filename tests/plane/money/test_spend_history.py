"""`spend_history` over the real socket: an agent's day by hour, its last 30
days and the day's top spenders, with what compression saved, from a real
plane whose turns went to the scripted LLM."""

from datetime import timedelta
from decimal import Decimal

import pytest

from plane.wire import protocol as p
from plane.wire.client import RequestFailed
from plane.wire.protocol import Usage

pytestmark = pytest.mark.usefixtures("each_store")  # read aside, on either engine

LISTING = 'for i in $(seq 1 300); do echo "Setting up libfoo$i (1.2.$i) ..."; done'


async def test_by_hour_by_day_and_top_spenders_with_what_compression_saved(start_plane):
    plane = await start_plane()
    await plane.send("demo", "/limit off")
    await plane.send("scout", "/limit off")
    plane.llm.reply("Yesterday's.", usage=Usage(input_tokens=300))  # $0.30 on 11-29
    await plane.turn("demo", "one")
    await plane.clock.advance(timedelta(days=1, hours=2))  # 2026-11-30 14:00
    await plane.quiet()
    plane.llm.reply("", tool_calls=[("run_command", {"command": LISTING})], usage=Usage())
    plane.llm.reply("Installed.", usage=Usage(input_tokens=100))  # $0.10 at 14:00
    await plane.turn("demo", "install")
    await plane.clock.advance(timedelta(hours=3))
    plane.llm.reply("Later.", usage=Usage(input_tokens=50, output_tokens=10))  # $0.07 at 17:00
    await plane.turn("demo", "later")
    plane.llm.reply("Scouting.", usage=Usage(input_tokens=500))  # $0.50
    await plane.turn("scout", "look")

    client = await plane.client()
    reply = await client.request(p.SpendHistory(agent="demo"))
    assert isinstance(reply, p.SpendHistoryReply)
    assert (str(reply.day), reply.agent) == ("2026-11-30", "demo")
    hours = {h.label: h for h in reply.hours}
    assert len(reply.hours) == 24 and reply.hours[0].label == "00"
    assert hours["14"].spent_usd == Decimal("0.1")
    assert hours["17"].spent_usd == Decimal("0.07")
    assert sum(h.spent_usd for h in reply.hours) == Decimal("0.17")  # not yesterday's
    [(chars, usd)] = [
        (row["chars"], Decimal(row["usd"]))
        for row in await plane.runtime.db.fetchall("SELECT chars, usd FROM savings")
    ]
    assert chars > 10_000 and hours["14"].saved_usd == usd == Decimal(chars // 4) / 1000
    assert [d.label for d in reply.days][-2:] == ["2026-11-29", "2026-11-30"]
    assert len(reply.days) == 30 and reply.days[0].label == "2026-11-01"
    assert (reply.days[-2].spent_usd, reply.days[-1].spent_usd) == (
        Decimal("0.3"),
        Decimal("0.17"),
    )
    assert reply.days[-1].saved_usd == usd
    assert [(t.label, t.spent_usd, t.saved_usd) for t in reply.top] == [
        ("scout", Decimal("0.5"), Decimal(0)),
        ("demo", Decimal("0.17"), usd),
    ]

    assert [(m.label, m.spent_usd) for m in reply.models] == [("scripted-model", Decimal("0.17"))]

    fleet = await client.request(p.SpendHistory())
    assert isinstance(fleet, p.SpendHistoryReply) and fleet.agent is None
    assert fleet.days[-1].spent_usd == Decimal("0.67")
    assert fleet.top == reply.top
    assert [(m.label, m.spent_usd) for m in fleet.models] == [("scripted-model", Decimal("0.67"))]


async def test_an_unknown_agent_is_one_clear_error(start_plane):
    plane = await start_plane()
    client = await plane.client()
    with pytest.raises(RequestFailed, match="nobody") as refused:
        await client.request(p.SpendHistory(agent="nobody"))
    assert refused.value.code == "no_such_agent"


async def test_a_model_with_no_price_is_in_the_days_models_as_unpriced(start_plane):
    """Its calls are at $0, which is not their cost: the day by model keeps
    it and says how many calls it leaves out, never "nothing was spent"."""
    from tests.support.fixtures_plane import CONFIG

    plane = await start_plane(CONFIG.replace("  demo: {}", "  demo: {model: other-model}"))
    await plane.send("demo", "/limit off")
    plane.llm.reply("Free?", usage=Usage(input_tokens=100))
    await plane.turn("demo", "hello")
    reply = await (await plane.client()).request(p.SpendHistory(agent="demo"))
    assert isinstance(reply, p.SpendHistoryReply)
    assert [(m.label, m.spent_usd, m.unpriced_calls) for m in reply.models] == [
        ("other-model", Decimal(0), 1)
    ]
    # The hour and the day it fell in say so too (the screen's headers sum them).
    assert sum(h.unpriced_calls for h in reply.hours) == 1
    assert reply.hours[12].unpriced_calls == 1 and reply.days[-1].unpriced_calls == 1


async def test_an_agent_whose_calls_are_all_unpriced_is_among_the_days_spenders(start_plane):
    """It spent what is not known, not nothing: listed after those that
    spent a known amount, with its unpriced calls (the screen says
    `unpriced (1 call)`), never left out as if it spent nothing."""
    from tests.support.fixtures_plane import CONFIG

    plane = await start_plane(CONFIG.replace("  demo: {}", "  demo: {model: other-model}"))
    await plane.send("demo", "/limit off")
    await plane.send("scout", "/limit off")
    plane.llm.reply("Free?", usage=Usage(input_tokens=100))
    await plane.turn("demo", "hello")
    plane.llm.reply("Scouting.", usage=Usage(input_tokens=500))  # $0.50
    await plane.turn("scout", "look")
    reply = await (await plane.client()).request(p.SpendHistory())
    assert isinstance(reply, p.SpendHistoryReply)
    assert [(t.label, t.spent_usd, t.unpriced_calls) for t in reply.top] == [
        ("scout", Decimal("0.5"), 0),
        ("demo", Decimal(0), 1),
    ]
