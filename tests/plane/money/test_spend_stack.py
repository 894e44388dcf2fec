"""`spend_stack` over the real socket: the fleet's last 30 days a series an
agent (or a model), the most spent first and the rest summed, each day with
what compression saved, from a real plane whose turns went to the scripted LLM."""

from datetime import timedelta
from decimal import Decimal

import pytest

from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_plane import CONFIG

pytestmark = pytest.mark.usefixtures("each_store")  # read aside, on either engine

LISTING = 'for i in $(seq 1 300); do echo "Setting up libfoo$i (1.2.$i) ..."; done'

THREE = CONFIG.replace(
    "agents:\n  demo: {}\n  scout: {}",
    "agents:\n  demo: {}\n  scout: {model: other-model}\n  extra: {}",
).replace("pricing:\n", "pricing:\n  other-model: {input: 2000, cached_input: 200, output: 4000}\n")


def spent(series: p.SpendSeries) -> list[Decimal]:
    return [point.spent_usd for point in series.days]


@pytest.fixture
async def month(start_plane):
    """2026-11-29: demo $0.30, scout $0.20 (other-model); 11-30 nothing;
    12-01: demo $0.10 with a compressed listing, extra $0.05."""
    plane = await start_plane(THREE)
    plane.llm.reply("One.", usage=Usage(input_tokens=300))
    await plane.turn("demo", "one")
    plane.llm.reply("Two.", usage=Usage(input_tokens=100))
    await plane.turn("scout", "two")
    await plane.clock.advance(timedelta(days=2))
    await plane.quiet()
    plane.llm.reply("", tool_calls=[("run_command", {"command": LISTING})], usage=Usage())
    plane.llm.reply("Installed.", usage=Usage(input_tokens=100))
    await plane.turn("demo", "install")
    plane.llm.reply("Three.", usage=Usage(input_tokens=50))
    await plane.turn("extra", "three")
    [saved] = [
        Decimal(row["usd"]) for row in await plane.runtime.db.fetchall("SELECT usd FROM savings")
    ]
    return plane, saved


async def test_by_agent_a_series_each_a_day_each_days_with_nothing_zero(month) -> None:
    plane, saved = month
    client = await plane.client()
    stack = await client.request(p.SpendStack())  # by agent, the top 5: the default
    assert isinstance(stack, p.SpendStackReply)
    assert (str(stack.day), stack.by) == ("2026-12-01", "agent")
    assert [(s.label, s.folded) for s in stack.series] == [("demo", 0), ("scout", 0), ("extra", 0)]
    demo, scout, extra = stack.series
    assert next(d.label for d in demo.days) == "2026-11-02"
    assert [d.label for d in demo.days][-3:] == ["2026-11-29", "2026-11-30", "2026-12-01"]
    zero = [Decimal(0)] * 27
    assert spent(demo) == [*zero, Decimal("0.3"), Decimal(0), Decimal("0.1")]
    assert spent(scout) == [*zero, Decimal("0.2"), Decimal(0), Decimal(0)]
    assert spent(extra) == [*zero, Decimal(0), Decimal(0), Decimal("0.05")]
    assert saved > 0 and [d.saved_usd for d in demo.days] == [Decimal(0)] * 29 + [saved]
    assert all(d.saved_usd == 0 for d in scout.days + extra.days)


async def test_by_model_and_the_rest_summed_past_the_top(month) -> None:
    plane, saved = month
    client = await plane.client()
    by_model = await client.request(p.SpendStack(by="model"))
    assert isinstance(by_model, p.SpendStackReply) and by_model.by == "model"
    assert [s.label for s in by_model.series] == ["scripted-model", "other-model"]
    scripted, other = by_model.series
    zero = [Decimal(0)] * 27
    assert spent(scripted) == [*zero, Decimal("0.3"), Decimal(0), Decimal("0.15")]
    assert spent(other) == [*zero, Decimal("0.2"), Decimal(0), Decimal(0)]
    assert scripted.days[-1].saved_usd == saved

    top_one = await client.request(p.SpendStack(top=1))
    assert isinstance(top_one, p.SpendStackReply)
    assert [(s.label, s.folded) for s in top_one.series] == [("demo", 0), ("others", 2)]
    assert spent(top_one.series[1]) == [*zero, Decimal("0.2"), Decimal(0), Decimal("0.05")]


async def test_an_empty_fleet_stacks_nothing_and_a_bad_by_is_refused(start_plane) -> None:
    plane = await start_plane()
    client = await plane.client()
    stack = await client.request(p.SpendStack(by="model"))
    assert isinstance(stack, p.SpendStackReply) and stack.series == []
    with pytest.raises(ValueError):
        p.SpendStack.model_validate({"id": 1, "by": "day"})


async def test_an_agent_on_a_model_with_no_price_is_stacked_with_its_calls_counted(
    start_plane,
) -> None:
    plane = await start_plane(
        CONFIG.replace("[scripted-model, other-model]", "[scripted-model, mystery-model]").replace(
            "  scout: {}", "  scout: {model: mystery-model}"
        )
    )
    await plane.send("scout", "/limit off")  # no price, so no turn under a ceiling
    plane.llm.reply("Unknown cost.", usage=Usage(input_tokens=100))
    await plane.turn("scout", "hello")
    client = await plane.client()
    stack = await client.request(p.SpendStack())
    assert isinstance(stack, p.SpendStackReply)
    [scout] = stack.series
    assert scout.label == "scout" and spent(scout) == [Decimal(0)] * 30
    assert [d.unpriced_calls for d in scout.days] == [0] * 29 + [1]
