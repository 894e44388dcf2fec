"""Attack: an agent asking for a looser ceiling again and again. Each ask is
refused, kept in the conversation with the `/limit` line the operator would
type, and the model reads the refusal; but the operator is alerted once, not
once an ask: one offer an agent is pending at a time (README "Guard rails",
one-tap approval). A later ask alerts again only once that offer is spent —
the operator loosened the ceiling since, or the offer's link expired — and
neither because the operator said no nor because the agent tightened its own
ceiling in between."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from plane.money.approvals import LINK_TTL
from plane.wire.protocol import Usage
from tests.support.approving import HTTP, approving, post, rows
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_plane import RunningPlane


def refusal(asked: int, has: str) -> str:
    return (
        f"This agent asked for a ceiling of ${asked}.00 a day, which is above the {has} it "
        f"has. It can ask to be held to less, never to more: /limit ${asked}.00, if you meant it."
    )


async def ask(plane: RunningPlane, *amounts: str) -> list[str]:
    """One turn in which the model calls `set_own_limit` with each amount;
    what it read back from each."""
    calls: list[tuple[str, dict[str, Any] | str]] = [("set_own_limit", {"usd": a}) for a in amounts]
    plane.llm.reply("", tool_calls=calls, usage=Usage())
    plane.llm.reply("Asked.", usage=Usage())
    await plane.turn("demo", "ask")
    assert plane.runtime.notifier is not None
    await plane.runtime.notifier.drained()
    messages = plane.llm.requests[-1]["messages"]
    return [m["content"] for m in messages if m["role"] == "tool"][-len(amounts) :]


def asks_alerted(receiver: Receiver) -> tuple[int, int]:
    """The asks the webhook and the ntfy topic were told of."""
    hooks = sum(h["event"] == "ask_refused" for h in receiver.hooks())
    topics = sum(title == "plane: demo asked for more" for title, _ in receiver.topics())
    return hooks, topics


async def test_twenty_asks_in_a_turn_alert_the_operator_once(start_plane, receiver):
    plane = await start_plane(approving(receiver), http=HTTP)
    read = await ask(plane, *(str(50 + n) for n in range(20)))
    assert read == [refusal(50 + n, "$1.00") for n in range(20)], "each ask is answered"
    said = await plane.services.conversation.history("demo", 100)
    assert [m.text for m in said if m.kind == "ask"] == [f"/limit {50 + n}" for n in range(20)]
    assert asks_alerted(receiver) == (1, 1)
    [hook] = [h for h in receiver.hooks() if h["event"] == "ask_refused"]
    assert (hook["raise"]["from_usd"], hook["raise"]["to_usd"]) == ("1", "50")
    offers = await rows(plane, "SELECT agent, to_usd FROM offers")
    assert [(agent, Decimal(to)) for agent, to in offers] == [("demo", Decimal(50))]


async def test_an_ask_alerts_again_once_its_offer_is_spent(start_plane, receiver):
    plane = await start_plane(approving(receiver), http=HTTP)
    await ask(plane, "50")
    [hook] = [h for h in receiver.hooks() if h["event"] == "ask_refused"]
    deny = {a["label"]: a["url"] for a in hook["actions"]}["Deny"]
    assert (await post(deny)).text == "demo: declined; its ceiling stays $1.00 a day.\n"
    await ask(plane, "0.90", "60", "0.80", "61")  # a no, then tightening: nothing new
    assert asks_alerted(receiver) == (1, 1)
    assert plane.services.gate.ceilings.of("demo") == Decimal("0.8")
    await plane.send("demo", "/limit 2")  # the operator loosened it since
    assert await ask(plane, "70") == [refusal(70, "$2.00")]
    assert asks_alerted(receiver) == (2, 2)
    await ask(plane, "71")
    assert asks_alerted(receiver) == (2, 2)
    await plane.clock.advance(LINK_TTL)  # the offer's link has expired
    await ask(plane, "72")
    assert asks_alerted(receiver) == (3, 3)
    await plane.clock.advance(timedelta(minutes=1))
    await ask(plane, "73")
    assert asks_alerted(receiver) == (3, 3)
