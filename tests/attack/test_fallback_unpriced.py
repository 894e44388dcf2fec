"""Step down attacked: a fallback model the plane serves but knows no price
for. Under a ceiling, unknown is never free: calls on it would count $0
against the ceiling, so an agent past its ratio would spend without end."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from plane.wire.protocol import Usage
from tests.plane.gateway.test_gateway_loop import HELLO_CHAT, openai_client
from tests.support.fixtures_gateway import CONFIG as GATEWAY
from tests.support.fixtures_gateway import StartGateway
from tests.support.fixtures_plane import CONFIG
from tests.support.scripted_llm import Reply
from tests.support.sdks import ON_ONE_WORKER, openai

UNPRICED = CONFIG.replace("  demo: {}", "  demo: {fallback: {at: 0.8, model: other-model}}")
"""demo's ceiling $1.00; from $0.80 it would step down to other-model, which has no price."""
HELD = (
    "demo is not answering: no price is known for other-model, and an agent under a ceiling "
    "takes no turn it cannot count. Add the model under `pricing:` in agents.yaml, or remove "
    "the limit with /limit off."
)


async def test_a_fallback_with_no_price_never_spends_uncounted_under_a_ceiling(start_plane):
    plane = await start_plane(UNPRICED)
    plane.llm.reply("done", usage=Usage(input_tokens=850))  # $0.85: past the ratio
    await plane.turn("demo", "work")
    for n in range(3):  # each would cost far past $1.00 on a model counted at $0
        plane.llm.reply(f"more {n}", usage=Usage(input_tokens=100_000))
        await plane.send("demo", f"more {n}")
        await plane.quiet()
    assert [request["model"] for request in plane.llm.requests] == ["scripted-model"]
    state = await plane.rows.state("demo")
    assert (state.status, state.hold_reason) == ("held", "unpriced")
    assert state.spend_today_usd == Decimal("0.85"), "nothing spent uncounted"
    said = [m.text for m in await plane.services.conversation.history("demo", 50)]
    assert said.count(HELD) == 1, said[-4:]


async def test_a_turn_that_crosses_the_ratio_goes_on_counted_on_its_own_model(start_plane):
    plane = await start_plane(UNPRICED)
    plane.llm.reply("", tool_calls=[("list_files", {})], usage=Usage(input_tokens=850))
    plane.llm.reply("listed", usage=Usage(input_tokens=10))
    await plane.turn("demo", "work")
    assert [request["model"] for request in plane.llm.requests] == ["scripted-model"] * 2
    assert (await plane.rows.state("demo")).spend_today_usd == Decimal("0.86")


async def test_held_so_it_goes_on_at_00_00_utc_on_its_own_model(start_plane):
    plane = await start_plane(UNPRICED)
    plane.llm.reply("done", usage=Usage(input_tokens=850))
    await plane.turn("demo", "work")
    await plane.send("demo", "more")
    await plane.quiet()
    plane.llm.reply("next day", usage=Usage(input_tokens=10))
    watching = plane.bus.subscribe()  # its turn at 00:00 UTC, whenever the day's end wakes it
    await plane.clock.advance(timedelta(hours=12))  # past 00:00 UTC
    await plane.until_turn_ends("demo", watching)
    assert [request["model"] for request in plane.llm.requests] == ["scripted-model"] * 2
    assert (await plane.rows.state("demo")).status == "idle"


@ON_ONE_WORKER
async def test_a_gateway_agent_is_held_not_switched_to_a_fallback_with_no_price(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway(
        GATEWAY.replace(
            "models: [scripted-model]\n    max_retries: 0\n  scripted-anthropic",
            "models: [scripted-model, other-model]\n    max_retries: 0\n  scripted-anthropic",
        ).replace(
            "aider: {provider: scripted, gateway: {}}",
            "aider: {provider: scripted, gateway: {}, fallback: {at: 0.5, model: other-model}}",
        )
    )
    await gw.services.gate.ceilings.set("aider", Decimal(1))
    gw.llm.default_reply = Reply("ok", Usage(input_tokens=600))
    async with openai_client(gw) as client:
        await client.chat.completions.create(
            model="scripted-model", max_tokens=10, messages=HELLO_CHAT
        )
        with pytest.raises(openai.APIStatusError):
            await client.chat.completions.create(
                model="scripted-model", max_tokens=10, messages=HELLO_CHAT
            )
    assert [r["model"] for r in gw.llm.requests] == ["scripted-model"]
    said = [m.text for m in await gw.said("aider")]
    assert not any(text.startswith("aider switched to") for text in said), said
    assert said[-1] == HELD.replace("demo", "aider")


async def test_a_turn_past_the_ceiling_onto_a_fallback_with_no_price_says_its_spend_as_its_row(
    start_plane,
):
    """One turn takes demo past its ratio and its ceiling: it runs on from
    here on a model with no price, so its row says `$1.05+$?`, and the
    ceiling reached says the same, not a figure that reads as all of it."""
    plane = await start_plane(UNPRICED)
    plane.llm.reply("done", usage=Usage(input_tokens=1050))  # $1.05: past both
    said = await plane.turn("demo", "work")
    state = await plane.rows.state("demo")
    assert (state.spend_today_usd, state.price_known) == (Decimal("1.05"), False)
    [reached] = [m.text for m in said if m.kind == "plane"]
    assert reached.startswith(
        "demo has reached its $1.00 daily ceiling ($1.05+$? spent) and starts no new turn "
    )
