"""Attack: a request written so that the gateway's estimate reads less than
the upstream bills. OpenAI-compatible servers built on pydantic (vLLM among
them) read `n: "16"`, `n: 16.0` or `n: " 16 "` as sixteen answers, each
billed; a gateway that counted one would let every such call in at a
sixteenth of its cost, and the day would end many calls over its ceiling.
A background response (Responses' `background: true`) is billed after the
call, where the gateway never sees its usage. Function definitions and a
structured output's schema sit outside the messages, and are billed as prompt.

A real plane with its HTTP listener; the scripted upstream bills what a
lenient server would (`lenient`), the ground truth the ledger is held to.
"""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal
from typing import Any

import pytest

from plane.wire.protocol import Usage
from tests.support.billing import Bills, billed_usd, held_within_a_call
from tests.support.fixtures_gateway import StartGateway
from tests.support.local_http import local_client
from tests.support.scripted_llm import Reply, derived_usage

pytestmark = [pytest.mark.timeout(60)]

HELLO = [{"role": "user", "content": "hello"}]
CEILING = Decimal(1)


def lenient(body: dict[str, Any], serial: int) -> Reply:
    """Sixteen answers for any `n` that a pydantic `int` field takes as 16."""
    n = body.get("n")
    answers = 1 if n is None else int(float(str(n).replace("_", "").strip()))
    return Bills(writes=20, delay_s=0.2)({**body, "n": answers}, serial)


@pytest.mark.parametrize("n", ["16", 16.0, " 16 ", "1_6"])
async def test_n_written_as_a_string_or_a_fraction_never_takes_the_day_past_one_call_over(
    start_gateway: StartGateway, n: object
) -> None:
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("aider", CEILING)
    gw.llm.responder = lenient
    body = {"model": "scripted-model", "messages": HELLO, "max_tokens": 20, "n": n}
    heads = {"authorization": f"Bearer {gw.keys['aider']}"}
    async with local_client(base_url=gw.url, timeout=30) as http:
        answers = await asyncio.gather(
            *(http.post("/v1/chat/completions", json=body, headers=heads) for _ in range(8))
        )
    pricer = gw.services.pricer
    spent = await gw.services.ledger.spend_today("aider")
    assert spent == billed_usd(gw.llm.billed, pricer)
    largest = max((pricer.price(b.model, b.usage).cost_usd for b in gw.llm.billed), default=0)
    assert spent <= CEILING + largest, f"${spent} spent: {len(gw.llm.billed)} calls went"
    for answer in answers:  # each refused says why, in one line
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["message"] == (
            f"The request's `n` is not a whole number of answers from 1 to 128: {json.dumps(n)}."
        )


async def test_n_as_a_number_or_null_goes(start_gateway: StartGateway) -> None:
    gw = await start_gateway()
    heads = {"authorization": f"Bearer {gw.keys['aider']}"}
    async with local_client(base_url=gw.url, timeout=30) as http:
        for n in (None, 1, 3):
            body = {"model": "scripted-model", "messages": HELLO, "max_tokens": 5, "n": n}
            answer = await http.post("/v1/chat/completions", json=body, headers=heads)
            assert answer.status_code == 200, answer.text
    assert len(gw.llm.requests) == 3


async def test_a_background_response_is_refused_before_it_is_sent(
    start_gateway: StartGateway,
) -> None:
    """`background: true` (Responses): the provider answers at once, `queued`
    with no usage, and bills the model's work later, when the client fetches
    it from elsewhere. The gateway would charge each such call its estimate,
    never what it cost: a client could run the day far past its ceiling."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("aider", CEILING)
    queued = {"id": "resp_1", "object": "response", "status": "queued", "usage": None}
    gw.llm.fault(200, body=queued)
    body = {"model": "scripted-model", "input": "Report.", "max_output_tokens": 100}
    body["background"] = True
    heads = {"authorization": f"Bearer {gw.keys['aider']}"}
    async with local_client(base_url=gw.url, timeout=30) as http:
        answer = await http.post("/v1/responses", json=body, headers=heads)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["message"] == (
        "The plane does not forward background responses (`background: true`): what they "
        "cost is known only after the call, where the plane cannot meter it."
    )
    assert gw.llm.requests == [] and await gw.entries() == []


HI = b'"messages": [{"role": "user", "content": "hi"}]'
NESTED = "The request body is nested deeper than the plane reads."


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (b'{"model": "scripted-model", "n": 1' + b"0" * 30 + b", " + HI + b"}", None),
        (b'{"model": "scripted-model", "messages": ' + b"[" * 5000 + b"]" * 5000 + b"}", NESTED),
        (
            b'{"model": "scripted-model", "messages": [{"role": "user", "content": '
            + b"[" * 900
            + b"]" * 900
            + b"}]}",
            NESTED,
        ),
    ],
)
async def test_a_request_past_what_the_plane_reads_gets_one_clear_refusal(
    start_gateway: StartGateway, raw: bytes, said: str | None
) -> None:
    """Not "the plane failed to handle this call" (a 500 the client retries):
    a 400 that says what is wrong, and nothing written or sent."""
    gw = await start_gateway()
    heads = {"authorization": f"Bearer {gw.keys['aider']}"}
    async with local_client(base_url=gw.url, timeout=30) as http:
        answer = await http.post("/v1/chat/completions", content=raw, headers=heads)
    assert answer.status_code == 400, answer.text
    message = answer.json()["error"]["message"]
    assert message == said or message.startswith("The request's `n` is not a whole number")
    assert gw.llm.requests == [] and await gw.entries() == []


async def test_an_output_limit_past_any_call_bounds_nothing(start_gateway: StartGateway) -> None:
    """`max_tokens: 10^30` is read as no limit (the estimate takes what the
    agent's answers really are), never as a figure no sum can hold."""
    gw = await start_gateway()
    heads = {"authorization": f"Bearer {gw.keys['aider']}"}
    raw = b'{"model": "scripted-model", "max_tokens": 1' + b"0" * 30 + b", " + HI + b"}"
    async with local_client(base_url=gw.url, timeout=30) as http:
        answer = await http.post("/v1/chat/completions", content=raw, headers=heads)
    assert answer.status_code == 200, answer.text
    [entry] = await gw.entries()
    assert entry.status == "settled"


def predicted_billed(body: dict[str, Any], serial: int) -> Reply:
    """A predicted output all rejected: OpenAI bills its tokens as output."""
    rejected = derived_usage({"messages": [body["prediction"]]}, "").input_tokens
    usage = Usage(input_tokens=derived_usage(body, "").input_tokens, output_tokens=10 + rejected)
    return Reply("rewritten", usage, delay_s=0.2)


async def test_a_predicted_output_never_takes_the_day_past_one_call_over(
    start_gateway: StartGateway,
) -> None:
    """Chat Completions' `prediction` (Predicted Outputs): the tokens of it the
    answer does not use are billed as output. 2,000 characters predicted and
    all rejected are 500 tokens out ($1.00), whatever `max_tokens` says."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("aider", CEILING)
    gw.gateway.admission.wait_s = 0.5
    gw.llm.responder = predicted_billed
    prediction = {"type": "content", "content": "x = 1\n" * 333}
    body = {"model": "scripted-model", "messages": HELLO, "max_tokens": 10}
    heads = {"authorization": f"Bearer {gw.keys['aider']}"}
    async with local_client(base_url=gw.url, timeout=30) as http:
        await asyncio.gather(
            *(
                http.post(
                    "/v1/chat/completions", json=body | {"prediction": prediction}, headers=heads
                )
                for _ in range(8)
            )
        )
    pricer = gw.services.pricer
    spent = await gw.services.ledger.spend_today("aider")
    assert spent == billed_usd(gw.llm.billed, pricer)
    largest = max(pricer.price(b.model, b.usage).cost_usd for b in gw.llm.billed)
    assert spent <= CEILING + largest, f"${spent} spent: {len(gw.llm.billed)} calls went"


SCHEMA = {
    "type": "object",
    "properties": {
        f"finding_{i}": {"type": "string", "description": "What the report says of it."}
        for i in range(12)
    },
}
"""About 1,000 characters: some 250 prompt tokens ($0.25), wherever the request puts it."""


def schema_billed(where: str) -> Bills:
    """An upstream that bills the schema as prompt, as the providers do with
    their tool and output definitions, besides what every scripted reply counts."""

    class Billed(Bills):
        def usage(self, body: dict[str, Any]) -> Usage:
            usage = super().usage(body)
            schema = len(json.dumps(body[where]))
            return usage.model_copy(update={"input_tokens": usage.input_tokens + -(-schema // 4)})

    return Billed(writes=10, delay_s=0.1)


@pytest.mark.parametrize(
    ("path", "agent", "where"),
    [
        # Chat Completions' older tool definitions, which OpenAI still takes.
        ("/v1/chat/completions", "aider", "functions"),
        ("/v1/chat/completions", "aider", "response_format"),
        ("/v1/responses", "aider", "text"),
        ("/v1/messages", "claude", "output_config"),
    ],
)
async def test_definitions_outside_the_messages_never_take_the_day_past_one_call_over(
    start_gateway: StartGateway, path: str, agent: str, where: str
) -> None:
    """DESIGN, Gateway: "*The day ends at most one call over*, whatever the
    concurrency and whatever the request." Function definitions, a structured
    output's schema: the provider writes them into the prompt and bills them,
    wherever in the body the request puts them; a gateway that counted only
    the messages and tools would let every such call in at its messages' cost."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set(agent, CEILING)
    gw.llm.responder = schema_billed(where)
    definitions: dict[str, Any] = {
        "functions": [{"name": "report", "parameters": SCHEMA}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": SCHEMA}},
        "text": {"format": {"type": "json_schema", "name": "r", "schema": SCHEMA}},
        "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
    }
    body: dict[str, Any] = {"model": "scripted-model", where: definitions[where]}
    if path == "/v1/responses":
        body |= {"input": "hello", "max_output_tokens": 10}
    else:
        body |= {"messages": HELLO, "max_tokens": 10}
    heads = (
        {"x-api-key": gw.keys[agent], "anthropic-version": "2023-06-01"}
        if agent == "claude"
        else {"authorization": f"Bearer {gw.keys[agent]}"}
    )
    async with local_client(base_url=gw.url, timeout=30) as http:
        await asyncio.gather(*(http.post(path, json=body, headers=heads) for _ in range(6)))
    spent = await gw.services.ledger.spend_today(agent)
    held_within_a_call(spent, CEILING, gw.llm.billed, gw.services.pricer)
