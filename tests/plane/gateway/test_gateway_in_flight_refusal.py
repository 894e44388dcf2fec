"""A gateway call the ledger's admission refuses only because of the calls in
flight (another plane's call written between this plane's weighing and its
write, or the fleet's calls, which no book of the gateway weighs) is no hold:
what was spent is under the ceiling. It waits for them, then gets a 429 with
a short Retry-After and the sentence of the calls in flight; its agent is
neither told nor shown held, and no alert is sent. Before, the client was
told a hold until 00:00 UTC ("the fleet's calls today come to $0.05 with
those in flight"), and so was the agent's conversation. Money really spent
at the ceiling still holds, as before; and a call waiting for another's goes
once that one settles cheaper."""

from __future__ import annotations

import asyncio
import re
from decimal import Decimal
from typing import Any

import httpx
import pytest

from plane.money.budgets import Budget
from plane.wire.protocol import Usage
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_gateway import CONFIG, GatewayPlane, StartGateway
from tests.support.local_http import local_client

pytestmark = pytest.mark.timeout(60)

CEILING = Decimal("0.05")
"""Every ceiling here; the other plane's call may cost all of it."""
BUDGETS: dict[str, str] = {
    "fleet": "",
    "group": "groups:\n  research:\n    limitUsd: 0.05\n    agents: [claude, aider]\n",
    "tag": "tags:\n  ticket-7: {limitUsd: 0.05}\n",
}
"""What agents.yaml adds for each ceiling (the fleet's is set by /limit)."""
WHOSE = {
    "fleet": ("the fleet's calls", "the fleet's"),
    "group": ("the group research's calls", "its group research's"),
    "tag": ("the calls tagged ticket-7", "the tag ticket-7's"),
}
"""Whose calls are in flight, and whose ceiling it is, as the sentence says."""
ASKED = {
    "model": "scripted-model",
    "messages": [{"role": "user", "content": "hello"}],
    "max_tokens": 10,
}


async def gateway(start_gateway: StartGateway, receiver: Receiver, ceiling: str) -> GatewayPlane:
    """A gateway plane alerting `receiver`, under a $0.05 `ceiling` above aider's own."""
    alerts = f"notify:\n  webhook: {receiver.url}/hook\n  retries: 0\n"
    gw = await start_gateway(CONFIG + BUDGETS[ceiling] + alerts)
    if ceiling == "fleet":
        await gw.services.gate.ceilings.set_fleet(CEILING)
    return gw


def another_planes_call_first(
    gw: GatewayPlane,
    ceiling: str,
    monkeypatch: pytest.MonkeyPatch,
    spent: bool = False,
    landed: asyncio.Event | None = None,
) -> list[int]:
    """claude's call on another plane, at most $0.05 under `ceiling`, written
    just before aider's first call is: after this plane weighed aider's call,
    before the ledger admits it (a race no book here sees). `spent`: that
    call has settled at $0.05 by then, money really spent; `landed` is set
    once the ledger has answered aider's call. Its id, once written."""
    ledger = gw.services.ledger
    open_call = ledger.open_call
    written: list[int] = []
    budgets: dict[str, Any] = {
        "fleet": {"fleet_ceiling": CEILING},
        "group": {"group": Budget("research", CEILING)},
        "tag": {"tag": Budget("ticket-7", CEILING)},
    }

    async def racing(agent: str, *args: Any, **kwargs: Any) -> int:
        if agent == "aider" and not written:
            other = await open_call("claude", "p", "m", CEILING, "estimate", **budgets[ceiling])
            written.append(other)
            if spent:
                await ledger.settle(other, Usage(input_tokens=50), CEILING, "t")
        try:
            return await open_call(agent, *args, **kwargs)
        finally:
            if landed is not None and agent == "aider":
                landed.set()

    monkeypatch.setattr(ledger, "open_call", racing)
    return written


async def call(gw: GatewayPlane, ceiling: str) -> httpx.Response:
    """One call of aider's client, tagged ticket-7 under the tag's ceiling."""
    heads = {"authorization": f"Bearer {gw.keys['aider']}"}
    if ceiling == "tag":
        heads["x-plane-tag"] = "ticket-7"
    async with local_client(base_url=gw.url, timeout=30) as http:
        return await http.post("/v1/chat/completions", json=ASKED, headers=heads)


async def told_nothing(gw: GatewayPlane, receiver: Receiver) -> None:
    """aider's conversation was told nothing, its row shows it not held, and no alert went."""
    assert [m.text for m in await gw.said("aider") if m.kind == "plane"] == []
    assert await gw.services.conversation.told_hold("aider") is None
    assert (await gw.rows.state("aider")).status != "held"
    notifier = gw.runtime.notifier
    assert notifier is not None
    await notifier.drained()
    assert receiver.hooks() == []


@pytest.mark.parametrize("ceiling", ["fleet", "group", "tag"])
async def test_a_call_refused_only_for_the_calls_in_flight_is_told_to_retry_not_held(
    start_gateway: StartGateway,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
    ceiling: str,
) -> None:
    gw = await gateway(start_gateway, receiver, ceiling)
    gw.gateway.admission.wait_s = 0.5
    another_planes_call_first(gw, ceiling, monkeypatch)
    refused = await call(gw, ceiling)
    assert refused.status_code == 429, refused.text
    assert refused.headers["retry-after"] == "5"
    said = refused.json()["error"]["message"]
    calls, whose = WHOSE[ceiling]
    assert re.fullmatch(
        rf"{calls} in flight \(about \$0\.05\) and this one \(about \$[0-9.]+\) would take "
        rf"more than the \$0\.05 left of {whose} \$0\.05 daily ceiling today; it waits for "
        r"them to settle: retry in 5 seconds\.",
        said,
    ), said
    assert gw.llm.requests == [], "nothing was sent"
    assert [e.agent for e in await gw.entries()] == ["claude"], "nothing was written"
    await told_nothing(gw, receiver)


@pytest.mark.parametrize("ceiling", ["fleet", "group", "tag"])
async def test_a_call_waiting_for_another_planes_call_goes_once_it_settles_cheaper(
    start_gateway: StartGateway,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
    ceiling: str,
) -> None:
    gw = await gateway(start_gateway, receiver, ceiling)
    gw.llm.default_reply = "ok"
    landed = asyncio.Event()
    other = another_planes_call_first(gw, ceiling, monkeypatch, landed=landed)
    answer = asyncio.create_task(call(gw, ceiling))
    await asyncio.wait_for(landed.wait(), 10)  # refused by the ledger: it waits
    await asyncio.sleep(0.3)
    assert not answer.done() and gw.llm.requests == []
    await gw.services.ledger.settle(other[0], Usage(input_tokens=5), Decimal("0.005"), "t")
    assert (await answer).status_code == 200
    assert len(gw.llm.requests) == 1
    await told_nothing(gw, receiver)


@pytest.mark.parametrize(
    ("ceiling", "alert"), [("fleet", "held"), ("group", "held"), ("tag", "tag")]
)
async def test_money_really_spent_at_the_ceiling_still_holds(
    start_gateway: StartGateway,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
    ceiling: str,
    alert: str,
) -> None:
    gw = await gateway(start_gateway, receiver, ceiling)
    another_planes_call_first(gw, ceiling, monkeypatch, spent=True)
    refused = await call(gw, ceiling)
    said = refused.json()["error"]["message"]
    assert "spent $0.05" in said and "00:00 UTC" in said, said
    assert "in flight" not in said
    assert refused.status_code == 400, "held, as Chat Completions says it: not retried"
    assert refused.json()["error"]["code"] == "daily_ceiling_reached"
    assert gw.llm.requests == []
    await receiver.until_hook(alert)
    if ceiling != "tag":  # a tag holds its calls, not the agent
        assert [m.text for m in await gw.said("aider") if m.kind == "plane"] == [said]


async def test_a_tags_alert_says_what_was_spent_not_the_calls_in_flight(
    start_gateway: StartGateway, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another plane's two calls under the tag's $0.05, written between this
    plane's weighing and its write: one settles at $0.05, money really spent,
    the other ($0.03 at most) still flies. The call is held by the tag, and
    both its refusal and the tag's alert say $0.05 spent (before, the alert
    said $0.08, the call in flight counted as spent)."""
    gw = await gateway(start_gateway, receiver, "tag")
    ledger, tag = gw.services.ledger, Budget("ticket-7", CEILING)
    open_call = ledger.open_call
    written: list[int] = []

    async def racing(agent: str, *args: Any, **kwargs: Any) -> int:
        if agent == "aider" and not written:
            for _ in range(2):
                written.append(await open_call("claude", "p", "m", Decimal("0.03"), "e", tag=tag))
            await ledger.settle(written[0], Usage(input_tokens=50), CEILING, "t")
        return await open_call(agent, *args, **kwargs)

    monkeypatch.setattr(ledger, "open_call", racing)
    refused = await call(gw, "tag")
    assert refused.status_code == 400, refused.text
    assert "have spent $0.05 of $0.05 today" in refused.json()["error"]["message"]
    await receiver.until_hook("tag")
    [alert] = [hook for hook in receiver.hooks() if hook["event"] == "tag"]
    assert alert["text"].startswith("the tag ticket-7 has spent $0.05 today"), alert
    assert Decimal(alert["spend_today_usd"]) == CEILING, alert
