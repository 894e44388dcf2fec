"""Attack: the upstream answers a call with another model than the one it
named: a router that falls back to a dearer model (OpenRouter's `models:
[...]`), an alias that resolves to one, a dated variant at its own price.
The call is charged at the price of the model that answered, whole or
streamed, in each API, and the ledger names that model; one whose price
is unknown is never free.

A real plane with its HTTP listener; the scripted upstream sends the
provider's reply verbatim, naming the model that answered.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from plane.wire import protocol as p
from tests.support.fixtures_gateway import GatewayPlane, StartGateway
from tests.support.local_http import local_client
from tests.support.stream_events import (
    chat_reply,
    chat_stream,
    messages_stream,
    responses_reply,
    responses_stream,
)

pytestmark = [pytest.mark.timeout(60)]

HELLO = [{"role": "user", "content": "hello"}]
CHAT = {"prompt_tokens": 1000, "completion_tokens": 100}
RESPONSES = {"input_tokens": 1000, "output_tokens": 100}
MODEL = "scripted-model"


async def ask(gw: GatewayPlane, path: str, agent: str, body: dict[str, Any]) -> httpx.Response:
    key = gw.keys[agent]
    heads = {"authorization": f"Bearer {key}"}
    if path == "/v1/messages":
        heads = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    async with local_client(base_url=gw.url, timeout=20) as http:
        return await http.post(path, json=body, headers=heads)


def answer_as(gw: GatewayPlane, path: str, streamed: bool, model: str) -> None:
    """Script the upstream's reply to a call of 1,000 tokens in and 100 out,
    answered by `model`."""
    if path == "/v1/messages":
        start = {"input_tokens": 1000, "output_tokens": 1}
        events = messages_stream(start, {"output_tokens": 100}, model=model)
        if streamed:
            gw.llm.verbatim(*events)
        else:
            reply = {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
                     "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
                     "usage": {"input_tokens": 1000, "output_tokens": 100}}  # fmt: skip
            gw.llm.fault(200, body=reply)
    elif path == "/v1/chat/completions":
        if streamed:
            gw.llm.verbatim(*chat_stream(CHAT, model=model))
        else:
            gw.llm.fault(200, body=chat_reply(CHAT, model=model))
    elif streamed:
        gw.llm.verbatim(*responses_stream(RESPONSES, model=model))
    else:
        gw.llm.fault(200, body=responses_reply(RESPONSES, model=model))


def body_of(path: str, model: str, streamed: bool) -> dict[str, Any]:
    if path == "/v1/responses":
        return {"model": model, "input": "hello", "stream": streamed}
    return {"model": model, "messages": HELLO, "max_tokens": 200, "stream": streamed}


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(
    ("path", "agent", "asked", "answered", "cost"),
    [
        # 1,000 in and 100 out: claude-haiku-4-5 $0.0015, claude-sonnet-4-5 $0.0045.
        ("/v1/messages", "claude", "claude-haiku-4-5", "claude-sonnet-4-5", "0.0045"),
        # gpt-4o-mini $0.00021, gpt-4o $0.0035.
        ("/v1/chat/completions", "aider", "gpt-4o-mini", "gpt-4o", "0.0035"),
        ("/v1/responses", "aider", "gpt-4o-mini", "gpt-4o", "0.0035"),
    ],
)
async def test_a_call_a_router_answered_with_a_dearer_model_is_charged_that_model(
    start_gateway: StartGateway,
    streamed: bool,
    path: str,
    agent: str,
    asked: str,
    answered: str,
    cost: str,
) -> None:
    gw = await start_gateway()
    answer_as(gw, path, streamed, answered)
    watching = gw.watch()
    answer = await ask(gw, path, agent, body_of(path, asked, streamed))
    assert answer.status_code == 200, answer.text
    line = await gw.settled(watching, agent)
    [entry] = await gw.entries()
    assert (entry.model, entry.cost_usd, entry.estimated) == (answered, Decimal(cost), False)
    assert answered in entry.price_source, entry.price_source
    assert line.text.startswith(f"{answered} · "), line.text


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(
    ("answered", "cost"),
    [
        # The dated variant gpt-4o names today: gpt-4o's price, $0.0035.
        ("gpt-4o-2024-08-06", "0.0035"),
        # An older one, dearer: $5 and $15 per 1M, $0.0065.
        ("gpt-4o-2024-05-13", "0.0065"),
    ],
)
async def test_a_dated_variant_of_the_model_asked_for_is_charged_its_own_price(
    start_gateway: StartGateway, streamed: bool, answered: str, cost: str
) -> None:
    gw = await start_gateway()
    answer_as(gw, "/v1/chat/completions", streamed, answered)
    answer = await ask(gw, "/v1/chat/completions", "aider", body_of("", "gpt-4o", streamed))
    assert answer.status_code == 200, answer.text
    [entry] = await gw.entries()
    assert (entry.model, entry.cost_usd, entry.estimated) == (answered, Decimal(cost), False)


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_call_answered_by_a_model_with_no_known_price_is_never_free(
    start_gateway: StartGateway, streamed: bool
) -> None:
    """What `mystery-model` costs is not known: the call is charged at least
    what the model asked for costs ($0.00021), marked an estimate, and its
    line says the rest is unpriced."""
    gw = await start_gateway()
    answer_as(gw, "/v1/chat/completions", streamed, "mystery-model")
    watching = gw.watch()
    answer = await ask(gw, "/v1/chat/completions", "aider", body_of("", "gpt-4o-mini", streamed))
    assert answer.status_code == 200, answer.text
    line = await gw.settled(watching, "aider")
    [entry] = await gw.entries()
    assert (entry.status, entry.model) == ("settled", "mystery-model")
    assert (entry.cost_usd, entry.estimated) == (Decimal("0.00021"), True)
    assert "mystery-model" in entry.price_source and "gpt-4o-mini" in entry.price_source
    assert line.text.startswith("mystery-model · "), line.text
    assert line.text.endswith("$0.0002 + unpriced"), line.text
    assert await gw.services.ledger.spend_today("aider") == Decimal("0.00021")


async def test_the_charts_count_a_call_priced_at_a_floor_as_unpriced(
    start_gateway: StartGateway,
) -> None:
    """As its line says `$0.0002 + unpriced`, the charts say the floor and
    that the rest is not known (`$0.0002 + unpriced (1 call)`), never the
    floor alone as its cost: in the day by hour, the last days, the day's top
    spenders, the day by model and by tool, and the fleet's stacked days."""
    gw = await start_gateway()
    answer_as(gw, "/v1/chat/completions", False, "mystery-model")
    answer = await ask(gw, "/v1/chat/completions", "aider", body_of("", "gpt-4o-mini", False))
    assert answer.status_code == 200, answer.text
    floor = Decimal("0.00021")
    history = await gw.runtime.api.handle(p.SpendHistory(agent="aider"))
    assert isinstance(history, p.SpendHistoryReply)
    assert [(h.spent_usd, h.unpriced_calls) for h in history.hours if h.spent_usd] == [(floor, 1)]
    assert (history.days[-1].spent_usd, history.days[-1].unpriced_calls) == (floor, 1)
    assert [(t.label, t.spent_usd, t.unpriced_calls) for t in history.top] == [("aider", floor, 1)]
    assert [(m.label, m.spent_usd, m.unpriced_calls) for m in history.models] == [
        ("mystery-model", floor, 1)
    ]
    assert sum(t.spent_usd for t in history.tools) == floor
    assert history.tools and all(t.unpriced_calls == 1 for t in history.tools), history.tools
    for by in ("agent", "model"):
        stack = await gw.runtime.api.handle(p.SpendStack(by=by))
        assert isinstance(stack, p.SpendStackReply)
        [layer] = stack.series
        assert (layer.days[-1].spent_usd, layer.days[-1].unpriced_calls) == (floor, 1)


async def test_the_scrape_counts_a_call_priced_at_a_floor_as_unpriced(
    start_gateway: StartGateway,
) -> None:
    """/metrics says which calls' cost is not all known, as the charts do:
    the floor-priced one, by the model that answered; the priced one not."""
    gw = await start_gateway()
    for answered in ("mystery-model", "gpt-4o-mini"):
        answer_as(gw, "/v1/chat/completions", False, answered)
        answer = await ask(gw, "/v1/chat/completions", "aider", body_of("", "gpt-4o-mini", False))
        assert answer.status_code == 200, answer.text
    async with local_client() as client:
        token = gw.home.token.read_text()
        scrape = await client.get(f"{gw.url}/metrics", headers={"Authorization": f"Bearer {token}"})
    unpriced = {
        tuple(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(scrape.text)
        for sample in family.samples
        if sample.name == "plane_llm_unpriced_calls_total"
    }
    assert unpriced == {(("agent", "aider"), ("gen_ai_request_model", "mystery-model")): 1.0}


async def test_the_model_asked_for_answering_as_itself_is_charged_as_before(
    start_gateway: StartGateway,
) -> None:
    """agents.yaml prices `scripted-model` at $0.001 a token in, $0.002 out:
    1,000 in and 100 out are $1.20."""
    gw = await start_gateway()
    answer_as(gw, "/v1/chat/completions", False, MODEL)
    answer = await ask(gw, "/v1/chat/completions", "aider", body_of("", MODEL, False))
    assert answer.status_code == 200, answer.text
    [entry] = await gw.entries()
    assert (entry.model, entry.cost_usd, entry.estimated) == (MODEL, Decimal("1.2"), False)
    assert entry.price_source == f"agents.yaml pricing {MODEL!r}"


@pytest.mark.parametrize("streamed", [False, True])
async def test_an_operators_price_for_the_name_asked_stands_whatever_answers_there(
    start_gateway: StartGateway, streamed: bool
) -> None:
    """agents.yaml prices `scripted-model`, the name the client sends (a
    deployment of the operator's own, on its own terms); its upstream says
    `gpt-4o-2024-08-06` answered, which genai-prices lists at $0.0035 for
    1,000 in and 100 out. The operator's price is the operator's word for
    that deployment: $1.20, not an estimate; the ledger names what answered."""
    gw = await start_gateway()
    answer_as(gw, "/v1/chat/completions", streamed, "gpt-4o-2024-08-06")
    answer = await ask(gw, "/v1/chat/completions", "aider", body_of("", MODEL, streamed))
    assert answer.status_code == 200, answer.text
    [entry] = await gw.entries()
    assert (entry.model, entry.cost_usd, entry.estimated) == (
        "gpt-4o-2024-08-06",
        Decimal("1.2"),
        False,
    )
    assert entry.price_source.startswith(f"agents.yaml pricing {MODEL!r}"), entry.price_source


def test_past_the_names_it_keeps_a_price_is_still_known_or_not() -> None:
    """`is_known` keeps its answers for at most `KNOWN_KEPT` names (an
    upstream's own to choose); past that it looks each up again, with the
    same answers."""
    from plane.money.pricing import KNOWN_KEPT, Pricer

    pricer = Pricer({})
    for n in range(KNOWN_KEPT + 50):
        assert not pricer.is_known(f"made-up-model-{n}")
    assert pricer.is_known("gpt-4o") and pricer.is_known("gpt-4o")
    assert not pricer.is_known("made-up-model-0") and not pricer.is_known("made-up-model-x")


@pytest.mark.parametrize("named", ["gpt-4o\x1b[2J", "gpt-4o\nmore", "m" * 257, ""])
async def test_a_name_no_model_has_is_not_taken_as_the_model_that_answered(
    start_gateway: StartGateway, named: str
) -> None:
    """A control character (a terminal's escape, a new line), a name past
    256 characters, an empty one: the reply names no model the ledger keeps
    or `plane ledger` prints; the call is charged as the model asked for."""
    gw = await start_gateway()
    answer_as(gw, "/v1/chat/completions", False, named)
    answer = await ask(gw, "/v1/chat/completions", "aider", body_of("", "gpt-4o-mini", False))
    assert answer.status_code == 200, answer.text
    [entry] = await gw.entries()
    assert (entry.model, entry.cost_usd, entry.estimated) == (
        "gpt-4o-mini",
        Decimal("0.00021"),
        False,
    )
