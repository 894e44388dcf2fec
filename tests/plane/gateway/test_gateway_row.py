"""A gateway agent written as the README shows it — `claude: {provider:
anthropic, limitUsd: 5, gateway: {}}`, under the shipped defaults (the
embedded model, unpriced for Anthropic) — says the model its client uses and
its true state: in its row, `plane status` and `plane show`, and after a
restart."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

import pytest

from plane.cli.manage import shown
from plane.daemon.events import EventBus
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.billing import Bills
from tests.support.command import plane_cli_async
from tests.support.fixtures_gateway import CONFIG as GATEWAY
from tests.support.fixtures_gateway import GatewayPlane, StartGateway
from tests.support.local_http import local_client
from tests.support.scripted_llm import Reply
from tests.support.sdks import ON_ONE_WORKER, anthropic_sdk
from tests.support.stream_events import chat_reply

if TYPE_CHECKING:
    from anthropic.types import MessageParam

pytestmark = [pytest.mark.timeout(30), ON_ONE_WORKER]

README = """
defaults:
  limitUsd: 5
  model: smollm2-135m
  provider: embedded
providers:
  anthropic: {kind: anthropic, base_url: {anthropic_url}}
agents:
  claude: {provider: anthropic, limitUsd: 5, gateway: {}}
"""
OPUS = "claude-opus-4-8"
HELLO: list[MessageParam] = [{"role": "user", "content": "hello"}]


async def status_line(gw: GatewayPlane) -> list[str]:
    status = await plane_cli_async(gw.home.root, "status")
    [line] = [line for line in status.stdout.splitlines() if line.split()[:1] == ["claude"]]
    return line.split()


async def show(gw: GatewayPlane) -> str:
    details = await gw.runtime.api.handle(p.ShowAgent(id=1, agent="claude"))
    assert isinstance(details, p.ShowAgentReply)
    return shown(details)


async def test_a_gateway_agent_says_its_clients_model_and_its_true_state(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway(README)
    before = await status_line(gw)
    assert before[:2] == ["claude", "idle"], before
    assert "smollm2-135m" not in before and "(unpriced)" not in before
    assert "model      its client's model (anthropic)" in await show(gw)

    gw.llm.default_reply = Reply("ok", Usage(input_tokens=2000, output_tokens=100))
    async with anthropic_sdk(base_url=gw.url, api_key=gw.keys["claude"], max_retries=0) as client:
        for n in range(5):  # five questions (the same one five times is a loop)
            ask: list[MessageParam] = [{"role": "user", "content": f"hello {n}"}]
            await client.messages.create(model=OPUS, max_tokens=1000, messages=ask)
    line = await status_line(gw)
    assert line[:3] == ["claude", "idle", OPUS], line  # was: held smollm2-135m (unpriced)
    assert line[3:] == ["$0.06", "of", "$5.00"], line
    said = await show(gw)
    assert f"model      {OPUS} (anthropic)\n" in said, said
    assert "today      $0.06 spent · idle" in said, said

    gw = await start_gateway(README, restart=gw)  # read back from the ledger
    assert (await status_line(gw))[:3] == ["claude", "idle", OPUS]


async def test_a_gateway_agent_with_calls_in_flight_is_working_not_held(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway(README)
    arrived = threading.Event()

    def slow(body: dict, serial: int) -> Reply:
        arrived.set()
        return Reply("ok", Usage(input_tokens=2000, output_tokens=100), delay_s=0.5)

    gw.llm.responder = slow
    async with anthropic_sdk(base_url=gw.url, api_key=gw.keys["claude"], max_retries=0) as client:
        flying = asyncio.create_task(
            client.messages.create(model=OPUS, max_tokens=8000, messages=HELLO)
        )
        assert await asyncio.to_thread(arrived.wait, 5)
        assert (await status_line(gw))[:3] == ["claude", "working", OPUS]
        await flying
    assert (await status_line(gw))[:2] == ["claude", "idle"]


async def test_the_days_notices_count_what_is_settled_not_calls_in_flight(
    start_gateway: StartGateway,
) -> None:
    """A call likely $0.60 in flight; another settles at $0.30 meanwhile:
    no "has spent $0.90" (80% of $1.00) until the first has settled too."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("aider", Decimal(1))
    arrived = threading.Event()

    def answer(body: dict, serial: int) -> Reply:
        slow = body["max_tokens"] == 300
        arrived.set()
        return Bills(writes=body["max_tokens"], delay_s=1.0 if slow else 0)(body, serial)

    gw.llm.responder = answer
    watching = gw.watch()

    def ask(limit: int) -> dict:
        return {"model": "scripted-model", "messages": HELLO, "max_tokens": limit}

    heads = {"authorization": f"Bearer {gw.keys['aider']}"}
    async with local_client(base_url=gw.url, timeout=30) as http:
        flying = asyncio.create_task(
            http.post("/v1/chat/completions", json=ask(300), headers=heads)
        )
        assert await asyncio.to_thread(arrived.wait, 5)
        assert (await http.post("/v1/chat/completions", json=ask(150), headers=heads)).is_success
        await gw.settled(watching, "aider")
        assert not [m.text for m in await gw.said("aider") if "has spent" in m.text]
        assert (await flying).is_success
    await gw.settled(watching, "aider")
    [warning] = [m.text for m in await gw.said("aider") if "has spent" in m.text]
    assert warning.startswith("aider has spent $0.90 today, 90% of its $1.00 daily ceiling")


class Told(EventBus):
    """The plane's bus, keeping every event emitted, whether anyone reads it or not."""

    def __init__(self) -> None:
        super().__init__()
        self.told: list[p.Event] = []

    def emit(self, event: p.Event) -> None:
        self.told.append(event)
        super().emit(event)


def ask(n: int) -> dict:
    return {"model": "scripted-model", "messages": [{"role": "user", "content": f"q {n}"}]}


async def calls(gw: GatewayPlane, agent: str, many: int) -> None:
    """`many` calls of `agent` at once, each answered."""
    heads = {"authorization": f"Bearer {gw.keys[agent]}"}
    async with local_client(base_url=gw.url, timeout=30) as http:
        answers = await asyncio.gather(
            *(http.post("/v1/chat/completions", json=ask(n), headers=heads) for n in range(many))
        )
    assert all(answer.is_success for answer in answers), answers


async def row_of(gw: GatewayPlane, agent: str) -> p.AgentState:
    """The agent's row in a snapshot, as `plane status` and a TUI's first frame get it."""
    [row] = [row for row in (await gw.rows.snapshot()).agents if row.name == agent]
    return row


async def test_a_gateway_agents_row_is_not_built_for_nobody(
    start_gateway: StartGateway,
) -> None:
    """With no client subscribed (and no alerts), a call settling builds no
    row; the snapshot a client then takes has the agent as it is."""
    told = Told()
    gw = await start_gateway(bus=told)
    gw.llm.responder = Bills(delay_s=0)
    await calls(gw, "aider", 3)
    assert [e for e in told.told if isinstance(e, p.AgentUpdated)] == []
    row = await row_of(gw, "aider")
    assert row.spend_today_usd == await gw.services.ledger.spend_today("aider") > 0
    assert (row.status, row.model) == ("idle", "scripted-model")


async def test_a_subscriber_sees_a_busy_gateway_agents_last_state(
    start_gateway: StartGateway,
) -> None:
    """Calls settling together show the agent's row once for all of them at
    most: the last row a subscriber sees is the agent as it is once they are done."""
    gw = await start_gateway()
    gw.llm.responder = Bills(delay_s=0.1)
    watching = gw.watch()
    await calls(gw, "aider", 8)
    final = await row_of(gw, "aider")
    assert final.status == "idle" and final.spend_today_usd > 0

    async def shown_final() -> None:
        while (event := await watching.next()) is not None:
            if isinstance(event, p.AgentUpdated) and event.agent.name == "aider":
                row = event.agent
                if (row.status, row.spend_today_usd) == (final.status, final.spend_today_usd):
                    return

    await asyncio.wait_for(shown_final(), 10)


async def test_a_row_says_a_spend_priced_at_a_floor_until_the_day_ends(
    start_gateway: StartGateway,
) -> None:
    """A call the upstream answered with a model that has no known price is
    charged as the one asked for, a floor: the agent's row says so
    (`floor_priced`; `plane status`, as the TUI's row, `+$?`), after a
    restart too, until the plane's day ends with the spend it was in."""
    gw = await start_gateway(GATEWAY)
    path, heads = gw.calls_as("aider")
    gw.llm.fault(200, body=chat_reply({"prompt_tokens": 1000, "completion_tokens": 100}, "other"))
    async with local_client(base_url=gw.url, timeout=20) as http:
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
        answer = await http.post(path, json=body, headers=heads)
        assert answer.status_code == 200, answer.text
    assert (await gw.rows.state("aider")).floor_priced
    assert not (await gw.rows.state("claude")).floor_priced
    status = await plane_cli_async(gw.home.root, "status")
    [line] = [line for line in status.stdout.splitlines() if line.split()[:1] == ["aider"]]
    assert "<$0.01+$? of $10.00" in line, line
    listed = json.loads((await plane_cli_async(gw.home.root, "status", "--json")).stdout)
    floors = {a["name"]: a["floor_priced"] for a in listed["agents"]}
    assert (floors["aider"], floors["claude"]) == (True, False), floors

    gw = await start_gateway(GATEWAY, restart=gw)
    row = await gw.rows.state("aider")
    assert row.floor_priced
    # Its model is still its client's choice, priced: not the one that answered.
    assert (row.model, row.status) == ("gpt-4o-mini", "idle"), row
    await gw.clock.advance(timedelta(days=1))
    assert not (await gw.rows.state("aider")).floor_priced
