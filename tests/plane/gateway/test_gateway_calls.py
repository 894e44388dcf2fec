"""The gateway's rules beyond one call: a call in flight finishes when the
ceiling is reached meanwhile, compression touches only tool results and
gives the same bytes every time, models are listed, the plane's
start line names the gateway."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp
import pytest

from plane.agents import notices
from plane.cli.manage import shown
from plane.errors import InvalidRequest, LedgerError
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.billing import Bills
from tests.support.fixtures_gateway import CONFIG, StartGateway
from tests.support.local_http import local_client
from tests.support.scripted_llm import Reply
from tests.support.sdk_replies import text_of
from tests.support.sdks import ON_ONE_WORKER, anthropic, anthropic_sdk, openai, openai_sdk

if TYPE_CHECKING:
    from anthropic.types import MessageParam
    from openai.types.chat import ChatCompletionMessageParam

pytestmark = [pytest.mark.timeout(30), ON_ONE_WORKER]

HELLO: list[MessageParam] = [{"role": "user", "content": "hello"}]
HELLO_CHAT: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hello"}]
LISTING = json.dumps(
    [{"id": i, "name": f"item {i}", "status": "ok", "tags": ["a", "b"]} for i in range(200)],
    indent=2,
)
"""A tool output the engine compresses (to a few hundred chars)."""


async def test_a_call_in_flight_finishes_and_the_next_is_refused(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    usage = Usage(input_tokens=100, output_tokens=10)
    arrived = threading.Event()

    def slow(body: dict, serial: int) -> Reply:
        arrived.set()
        return Reply("slow but paid", usage, delay_s=0.5)

    gw.llm.responder = slow
    async with anthropic_sdk(base_url=gw.url, api_key=gw.keys["claude"], max_retries=0) as client:
        flying = asyncio.create_task(
            client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
        )
        assert await asyncio.to_thread(arrived.wait, 5)  # the call is at the upstream
        await gw.services.gate.ceilings.set("claude", Decimal("0.01"))
        reply = await flying
        assert text_of(reply) == "slow but paid"
        with pytest.raises(anthropic.RateLimitError):
            await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
    [entry] = await gw.entries()
    assert (entry.status, entry.cost_usd) == ("settled", Decimal("0.12"))


async def test_calls_arriving_together_see_each_other_and_one_too_dear_is_not_sent(
    start_gateway: StartGateway,
) -> None:
    """Two calls at once, each likely $0.21, under a $0.30 ceiling: the second
    waits for the first, which bills its $0.20; then it does not fit in what
    is left, and is refused before it is sent, saying what it would cost."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("aider", Decimal("0.30"))
    gw.llm.responder = Bills(writes=100, delay_s=0.2)
    async with openai_sdk(
        base_url=f"{gw.url}/v1", api_key=gw.keys["aider"], max_retries=0
    ) as client:
        calls = [
            client.chat.completions.create(
                model="scripted-model",
                messages=HELLO_CHAT,
                max_tokens=100,
            )
            for _ in range(2)
        ]
        results = await asyncio.gather(*calls, return_exceptions=True)
    refused = [r for r in results if isinstance(r, openai.BadRequestError)]
    assert len(refused) == 1 and len(gw.llm.requests) == 1
    said = refused[0].message
    assert "aider is not answering this call: it would cost about $0.20, and $0.10 is left" in said
    assert "has spent" not in said
    assert await gw.services.ledger.spend_today("aider") == Decimal("0.202")


COMPRESSING = CONFIG
"""Gateway agents compress unless told not to."""
NOT_COMPRESSING = CONFIG.replace(
    "claude: {provider: scripted-anthropic, gateway: {}}",
    "claude: {provider: scripted-anthropic, gateway: {compress: false}}",
)


def _anthropic_request() -> dict:
    return {
        "model": "scripted-model",
        "max_tokens": 10,
        "system": LISTING,
        "messages": [
            {"role": "user", "content": LISTING},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": LISTING},
                    {
                        "type": "tool_result",
                        "tool_use_id": "t2",
                        "content": LISTING,
                        "cache_control": {"type": "ephemeral"},
                    },
                ],
            },
        ],
    }


async def test_compression_touches_only_tool_results_the_same_every_time(
    start_gateway: StartGateway,
) -> None:
    """On by default; a result marked for the cache is compressed too, its mark kept."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("claude", None)  # the listing's estimate is over $1
    headers = {"x-api-key": gw.keys["claude"], "anthropic-version": "2023-06-01"}
    async with local_client() as client:
        for _ in range(2):
            answer = await client.post(
                f"{gw.url}/v1/messages", json=_anthropic_request(), headers=headers
            )
            assert answer.status_code == 200
    first, second = gw.llm.requests
    assert json.dumps(first) == json.dumps(second), "the same request gave other bytes"
    assert first["system"] == LISTING
    assert first["messages"][0]["content"] == LISTING  # a user's text, untouched
    fresh, marked = first["messages"][2]["content"]
    assert len(fresh["content"]) < len(LISTING) / 10
    assert marked["content"] == fresh["content"]  # a result marked for the cache too
    assert marked["cache_control"] == {"type": "ephemeral"}
    line = (await gw.said("claude"))[-1].text
    assert "compression saved" in line


async def test_compression_of_chat_tool_messages(start_gateway: StartGateway) -> None:
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("aider", None)
    async with openai_sdk(
        base_url=f"{gw.url}/v1", api_key=gw.keys["aider"], max_retries=0
    ) as client:
        await client.chat.completions.create(
            model="scripted-model",
            messages=[
                {"role": "user", "content": LISTING},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "ls", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": LISTING},
            ],
        )
    sent = gw.llm.requests[0]["messages"]
    assert sent[0]["content"] == LISTING and len(sent[2]["content"]) < len(LISTING) / 10


async def test_without_compress_the_request_goes_as_sent(start_gateway: StartGateway) -> None:
    gw = await start_gateway(NOT_COMPRESSING)
    await gw.services.gate.ceilings.set("claude", None)
    headers = {"x-api-key": gw.keys["claude"]}
    async with local_client() as client:
        await client.post(f"{gw.url}/v1/messages", json=_anthropic_request(), headers=headers)
    assert gw.llm.requests[0] == _anthropic_request()


async def test_models_are_listed_in_each_apis_shape(start_gateway: StartGateway) -> None:
    gw = await start_gateway()
    async with openai_sdk(
        base_url=f"{gw.url}/v1", api_key=gw.keys["aider"], max_retries=0
    ) as client:
        listed = [m.id async for m in client.models.list()]
    assert listed == ["scripted-model"]
    async with anthropic_sdk(
        base_url=gw.url, api_key=gw.keys["claude"], max_retries=0
    ) as by_anthropic:
        page = await by_anthropic.models.list()
    assert [m.id for m in page.data] == ["scripted-model"]


async def test_bad_requests_get_one_clear_error_and_change_nothing(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    headers = {"x-api-key": gw.keys["claude"]}
    async with local_client() as client:
        not_json = await client.post(f"{gw.url}/v1/messages", content=b"{", headers=headers)
        no_model = await client.post(f"{gw.url}/v1/messages", json={"x": 1}, headers=headers)
        not_a_number = await client.post(  # JSON has no NaN: Python's reader takes it
            f"{gw.url}/v1/messages",
            content=b'{"model": "scripted-model", "max_tokens": 10, "temperature": NaN, '
            b'"messages": [{"role": "user", "content": "hi"}]}',
            headers=headers,
        )
        wrong_api = await client.post(
            f"{gw.url}/v1/chat/completions", json={"model": "m"}, headers=headers
        )
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["error"]["message"]
    assert no_model.status_code == 400 and "names no model" in no_model.text
    assert not_a_number.status_code == 400
    assert (
        not_a_number.json()["error"]["message"]
        == "The request body is not JSON: NaN is not a JSON value."
    )
    assert wrong_api.status_code == 400
    assert "does not speak OpenAI Chat Completions" in wrong_api.json()["error"]["message"]
    assert gw.llm.requests == [] and await gw.entries() == []


async def test_a_call_whose_cost_cannot_be_recorded_is_refused_with_the_ledgers_words(
    start_gateway: StartGateway, monkeypatch, caplog
) -> None:
    """The store refuses the settle (away, or the call counted by another
    plane meanwhile): the client gets the ledger's sentence as a 503, never
    the answer, and the plane's log one line, not a traceback."""
    gw = await start_gateway()
    gw.llm.default_reply = "paid, not recorded"
    said = "Spend could not be recorded in the ledger (the store is away)."

    async def refused(*args: object, **kwargs: object) -> None:
        raise LedgerError(said)

    monkeypatch.setattr(gw.services.ledger, "settle", refused)
    async with local_client() as client:
        answer = await client.post(
            f"{gw.url}/v1/messages",
            json={"model": "scripted-model", "max_tokens": 10, "messages": HELLO},
            headers={"x-api-key": gw.keys["claude"]},
        )
    assert answer.status_code == 503
    assert answer.json()["error"]["message"] == said
    assert "paid, not recorded" not in answer.text
    logged = [r for r in caplog.records if r.name == "plane.daemon.http"]
    assert [r.getMessage() for r in logged] == [f"gateway: /v1/messages: {said}"]
    assert all(r.exc_info is None for r in logged)


async def test_a_store_failing_after_admission_loses_no_call(
    start_gateway: StartGateway, monkeypatch
) -> None:
    """Admitted and written pending, a call whose held spell's end cannot be
    kept (the store failing that one write) goes on and is settled: it was
    left pending for good on a plane that lived on, and answered 500."""
    gw = await start_gateway()
    gw.llm.default_reply = "answered"
    await gw.services.gate.ceilings.set("claude", Decimal(0))
    async with anthropic_sdk(base_url=gw.url, api_key=gw.keys["claude"], max_retries=0) as client:
        with pytest.raises(anthropic.APIStatusError):  # held, and told: a spell begins
            await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
        await gw.services.gate.ceilings.set("claude", None)
        remember = gw.services.conversation.remember_hold

        async def failing(agent: str, reason: str | None) -> None:
            if reason is None:
                raise sqlite3.OperationalError("disk I/O error")
            await remember(agent, reason)

        monkeypatch.setattr(gw.services.conversation, "remember_hold", failing)
        answer = await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
    assert text_of(answer) == "answered"
    assert [e.status for e in await gw.entries()] == ["settled"]


async def test_a_call_recorded_is_answered_when_what_is_said_of_it_fails(
    start_gateway: StartGateway, monkeypatch, caplog
) -> None:
    """The call settled in the ledger, then the store fails what is said of
    it (its savings, its line, its row): the client still gets the answer it
    paid for, not a 500, and the log says what was not said."""
    gw = await start_gateway()
    gw.llm.default_reply = "paid and recorded"

    async def failing(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(gw.services.savings, "record", failing)
    async with anthropic_sdk(base_url=gw.url, api_key=gw.keys["claude"], max_retries=0) as client:
        answer = await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
    assert text_of(answer) == "paid and recorded"
    [entry] = await gw.entries()
    assert entry.status == "settled"
    said = f"claude: call {entry.id} was recorded; what is said of it failed: disk I/O error"
    assert said in caplog.text


async def test_events_that_arrive_together_reach_the_client_in_one_piece(
    start_gateway: StartGateway,
) -> None:
    """An upstream's events that come in one piece go on to the client in
    one write, not one an event: a chunk of the response for them all (each
    write costs the plane a send); the call's end, after its settle."""
    gw = await start_gateway()

    def chunk(data: object) -> bytes:
        return f"data: {json.dumps(data)}\n\n".encode()

    pieces = ["One", " two", " three", " four", " five"]
    answer = [
        chunk({"model": "scripted-model", "choices": [{"index": 0, "delta": {"content": piece}}]})
        for piece in pieces
    ]
    usage = {"prompt_tokens": 10, "completion_tokens": 5}
    gw.llm.verbatim(b"".join(answer), chunk({"choices": [], "usage": usage}) + b"data: [DONE]\n\n")
    path, headers = gw.calls_as("aider")
    asked = {"model": "scripted-model", "stream": True, "messages": HELLO_CHAT}
    async with aiohttp.ClientSession() as session:
        async with session.post(gw.url + path, json=asked, headers=headers) as response:
            assert response.status == 200
            chunks = [data async for data, _ in response.content.iter_chunks()]
    assert b"".join(chunks) == b"".join(answer) + b"data: [DONE]\n\n"
    assert len(chunks) < len(pieces), chunks
    [entry] = await gw.entries()
    assert (entry.status, entry.cost_usd) == ("settled", Decimal("0.02"))


async def test_a_calls_line_and_what_it_taught_share_one_commit(
    start_gateway: StartGateway,
) -> None:
    """Once a call is settled, what its estimates learned and its line in the
    conversation go to the store's writer together, to share a trip there and
    a commit, not one each after the other (its writer may take the first
    alone, when it is woken at once: over calls one after another, they share)."""
    gw = await start_gateway()
    async with openai_sdk(base_url=f"{gw.url}/v1", api_key=gw.keys["aider"]) as client:
        await client.chat.completions.create(model="scripted-model", messages=HELLO_CHAT)
        counts = gw.db.counts
        before = (counts.writes, counts.batches)
        for _ in range(5):
            await client.chat.completions.create(model="scripted-model", messages=HELLO_CHAT)
        writes, batches = counts.writes - before[0], counts.batches - before[1]
    assert writes == 5 * 4  # opened, settled, learned, its line
    assert batches < writes


async def test_the_start_line_names_the_gateway(start_gateway: StartGateway) -> None:
    gw = await start_gateway()
    assert f"the gateway on http://127.0.0.1:{gw.plane.http_port}" in gw.plane.started()


async def test_count_tokens_checks_the_key_and_asks_the_upstream_unmetered(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    body = {"model": "scripted-model", "messages": HELLO}
    url = f"{gw.url}/v1/messages/count_tokens"
    async with local_client() as client:
        unknown = await client.post(url, json=body, headers={"x-api-key": "x"})
        known = await client.post(url, json=body, headers={"x-api-key": gw.keys["claude"]})
    assert unknown.status_code == 401
    # The scripted upstream has no such route: its answer, passed on as it said it.
    assert known.status_code == 404 and "no route /v1/messages/count_tokens" in known.text
    assert await gw.entries() == []


async def test_a_gateway_agent_has_a_row_and_limit_but_takes_no_turns(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    await gw.runtime.api.handle(p.Send(agent="claude", text="/limit 0.02"))
    assert gw.services.gate.ceilings.of("claude") == Decimal("0.02")
    ran = await gw.runtime.api.handle(p.Send(agent="claude", text="are you there?"))
    assert ran.refused, "nothing will answer it: `plane send` exits 1"
    said = ran.messages
    assert [(m.kind, m.text) for m in said] == [
        ("operator", "are you there?"),
        ("plane", notices.gateway_agent("claude")),
    ]
    assert await gw.services.conversation.count_waiting("claude") == 0, "nothing waits for ever"
    snapshot = await gw.rows.snapshot()
    row = next(a for a in snapshot.agents if a.name == "claude")
    assert (row.limit_usd, row.provider, row.status) == (
        Decimal("0.02"),
        "scripted-anthropic",
        "idle",
    )
    assert gw.llm.requests == [], "a gateway agent took a turn of its own"


@pytest.mark.parametrize(
    "fields", [{"role": "terse"}, {"tools": []}, {"model": "scripted-model"}, {"limit": "abc"}]
)
async def test_what_is_the_clients_own_is_refused_for_a_gateway_agent(
    start_gateway: StartGateway, fields: dict[str, object]
) -> None:
    gw = await start_gateway()
    before = await gw.rows.state("claude")
    with pytest.raises(InvalidRequest) as refused:
        await gw.runtime.api.handle(
            p.EditAgent.model_validate({"id": 1, "agent": "claude", **fields})
        )
    assert str(refused.value) == (
        "abc is not an amount. Use 5, $0.25 or off."
        if "limit" in fields
        else "claude is a gateway agent: its client chooses the model, the tools and the "
        "prompt; only its limit is edited here."
    )
    assert await gw.rows.state("claude") == before


async def test_a_gateway_agent_is_shown_and_edited_as_what_applies_to_it(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    ran = await gw.runtime.api.handle(p.Send(agent="claude", text="/new"))
    assert ran.refused
    assert ran.messages[1].text == (
        "claude is a gateway agent: its sessions are its client's, so /new starts none here."
    )
    changed = await gw.runtime.api.handle(p.EditAgent(id=1, agent="claude", limit="3"))
    assert changed.agent.limit_usd == Decimal(3)
    details = await gw.runtime.api.handle(p.ShowAgent(id=2, agent="claude"))
    assert details.agent.gateway
    assert shown(details).splitlines() == [
        "claude (from agents.yaml; a gateway agent)",
        "  model      scripted-model (scripted-anthropic)",
        "  calls      from its own client, with the client's tools and prompt",
        "  ceiling    $3.00 a day, from /limit",
        "  today      $0.00 spent · idle",
    ]
    demo = await gw.runtime.api.handle(p.ShowAgent(id=3, agent="demo"))
    assert not demo.agent.gateway
    assert "  workspace  " in shown(demo)


async def test_a_call_in_flight_when_the_plane_stops_finishes_and_is_settled(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    arrived = threading.Event()

    def slow(body: dict, serial: int) -> Reply:
        arrived.set()
        return Reply("finished", Usage(input_tokens=100, output_tokens=10), delay_s=0.5)

    gw.llm.responder = slow
    async with openai_sdk(
        base_url=f"{gw.url}/v1", api_key=gw.keys["aider"], max_retries=0
    ) as client:
        flying = asyncio.create_task(
            client.chat.completions.create(model="scripted-model", messages=HELLO_CHAT)
        )
        assert await asyncio.to_thread(arrived.wait, 5)
        gw.plane.stop_event.set()
        await gw.plane.shutdown()
        reply = await flying
    assert reply.choices[0].message.content == "finished"
    rows = await _calls(gw.home.db)
    assert rows == [("aider", "settled", "0.12")]


async def _calls(db: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute("SELECT agent, status, cost_usd FROM calls ORDER BY id"))
