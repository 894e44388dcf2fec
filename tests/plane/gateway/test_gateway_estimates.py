"""What a gateway call is expected to cost: read from the request (`n`,
documents, server tools, a previous response, a stored prompt), learned from
the agent's calls (and kept across a restart), with web searches priced."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from plane.wire.protocol import Usage
from tests.support.billing import Bills
from tests.support.fixtures_gateway import CONFIG, GatewayPlane, StartGateway
from tests.support.fixtures_postgres import refuse
from tests.support.local_http import local_client
from tests.support.scripted_llm import Reply
from tests.support.stream_events import (
    chat_reply,
    chat_stream,
    messages_stream,
    responses_reply,
    responses_stream,
)

pytestmark = pytest.mark.timeout(30)

HELLO = [{"role": "user", "content": "hello"}]
DOCUMENT = {"type": "document", "source": {"type": "url", "url": "https://example.com/r.pdf"}}


async def post(gw: GatewayPlane, path: str, key: str, body: dict[str, Any]) -> httpx.Response:
    if path == "/v1/messages":
        heads = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    else:
        heads = {"authorization": f"Bearer {key}"}
    async with local_client(base_url=gw.url, timeout=30) as http:
        return await http.post(path, json=body, headers=heads)


def read_document() -> dict[str, Any]:
    content = [DOCUMENT, {"type": "text", "text": "Summarise it."}]
    return {
        "model": "scripted-model",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": content}],
    }


@pytest.mark.usefixtures("each_store")
async def test_a_call_far_above_its_estimate_raises_the_next_even_after_a_restart(
    start_gateway: StartGateway,
) -> None:
    """A document the provider fetched billed 20,000 prompt tokens ($20) where
    the body showed a few: the next such call is expected to cost as much, and
    is refused before it is sent when that does not fit. A restart learns it
    again from the ledger."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("claude", Decimal(30))
    gw.llm.responder = Bills(held=20_000, delay_s=0)
    first = await post(gw, "/v1/messages", gw.keys["claude"], read_document())
    assert first.status_code == 200
    spent = await gw.services.ledger.spend_today("claude")
    assert spent > 20
    for _ in range(2):
        again = await post(gw, "/v1/messages", gw.keys["claude"], read_document())
        assert again.status_code == 429, again.text
        said = again.json()["error"]["message"]
        assert said.startswith("claude is not answering this call: it would cost about $20.")
        assert f"and ${30 - spent:.2f} is left of its $30.00 daily ceiling today" in said
        assert int(again.headers["retry-after"]) == 12 * 3600
        gw = await start_gateway(restart=gw)
    assert len(gw.llm.requests) == 1, "a call too dear reached the upstream"


async def test_a_stored_prompt_is_as_large_as_its_last_use(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    key = gw.keys["aider"]  # on the scripted provider, which speaks Responses too
    await gw.services.gate.ceilings.set("aider", Decimal(30))
    gw.llm.responder = Bills(held=20_000, delay_s=0)
    body = {"model": "scripted-model", "prompt": {"id": "pmpt_1"}, "input": "Go."}
    answers = [await post(gw, "/v1/responses", key, body) for _ in range(2)]
    assert [a.status_code for a in answers] == [200, 400]
    assert "it would cost about $20." in answers[1].json()["error"]["message"]
    assert len(gw.llm.requests) == 1


@pytest.mark.usefixtures("each_store")
async def test_a_streamed_response_is_known_to_the_call_that_continues_it(
    start_gateway: StartGateway,
) -> None:
    """A response of 20,000 prompt tokens ($20), streamed; the next call names
    it, and its body says little: the ledger says how large it is."""
    gw = await start_gateway()
    key = gw.keys["aider"]
    gw.llm.responder = Bills(delay_s=0)
    await gw.services.gate.ceilings.set("aider", None)
    body: dict[str, Any] = {"model": "scripted-model", "input": "word " * 16_000, "stream": True}
    first = await post(gw, "/v1/responses", key, body)
    assert first.status_code == 200 and "response.completed" in first.text
    await gw.services.gate.ceilings.set("aider", Decimal(25))  # $20 spent, $5 left
    body = {"model": "scripted-model", "input": "And?", "previous_response_id": "resp_1"}
    second = await post(gw, "/v1/responses", key, body)
    assert second.status_code == 400
    said = second.json()["error"]["message"]
    found = re.search(r"it would cost about \$([\d.]+), and \$4.98 is left", said)
    assert found is not None and Decimal(found.group(1)) > 15, said


@pytest.mark.parametrize("streamed", [False, True])
async def test_web_searches_are_priced(start_gateway: StartGateway, streamed: bool) -> None:
    """Anthropic reports the searches its server tool made; each is billed
    ($10 per 1,000, genai-prices' price for Claude Sonnet 4.5)."""
    gw = await start_gateway()
    usage = Usage(input_tokens=1000, output_tokens=100)
    gw.llm.reply("found", usage=usage, searches=3)
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 500,
        "stream": streamed,
        "messages": HELLO,
        "tools": [{"type": "web_search_20250305", "name": "web_search", "max_uses": 5}],
    }
    answer = await post(gw, "/v1/messages", gw.keys["claude"], body)
    assert answer.status_code == 200
    [entry] = await gw.entries()
    assert entry.cost_usd == Decimal("0.0345")  # 1,000 at $3/M, 100 at $15/M, 3 at $0.01
    said = await gw.said("claude")
    assert "3 web searches" in said[-1].text


def tool_calls() -> list[dict[str, Any]]:
    """Two file searches, and three runs of code in two containers."""
    searched = {"type": "file_search_call", "status": "completed", "queries": ["q"]}
    ran = {"type": "code_interpreter_call", "status": "completed", "code": "1 + 1"}
    return [
        searched | {"id": "fs_1"},
        searched | {"id": "fs_2"},
        ran | {"id": "ci_1", "container_id": "cntr_a"},
        ran | {"id": "ci_2", "container_id": "cntr_a"},
        ran | {"id": "ci_3", "container_id": "cntr_b"},
    ]


FILES_AND_CODE = [
    {"type": "file_search", "vector_store_ids": ["vs_1"]},
    {"type": "code_interpreter", "container": {"type": "auto", "memory_limit": "4g"}},
]


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(
    ("model", "cost"),
    [
        # 1,000 in at $2.50/M and 100 out at $10/M ($0.0035), two file searches
        # at genai-prices' $2.50 per 1,000 ($0.005), two containers of 4 GB at
        # OpenAI's $0.03 a GB ($0.24).
        ("gpt-4o", Decimal("0.2485")),
        # As agents.yaml prices them: $0.001 and $0.002 a token ($1.20), file
        # searches $5 per 1,000 ($0.01), containers $0.05 a GB ($0.40).
        ("scripted-model", Decimal("1.61")),
    ],
)
async def test_file_searches_and_code_containers_are_priced(
    start_gateway: StartGateway, streamed: bool, model: str, cost: Decimal
) -> None:
    """OpenAI bills Responses' `file_search` per call and `code_interpreter`
    per container (by its memory), besides the tokens: the response's output
    items say what was used."""
    priced = "output: 2000, file_search: 5, code_interpreter: 0.05}"
    gw = await start_gateway(CONFIG.replace("output: 2000}", priced) if model in CONFIG else CONFIG)
    usage = {"input_tokens": 1000, "output_tokens": 100}
    if streamed:
        gw.llm.verbatim(*responses_stream(usage, tool_calls(), model=model))
    else:
        gw.llm.fault(200, body=responses_reply(usage, tool_calls(), model=model))
    body = {"model": model, "stream": streamed, "input": "hello", "tools": FILES_AND_CODE}
    answer = await post(gw, "/v1/responses", gw.keys["aider"], body)
    assert answer.status_code == 200, answer.text
    [entry] = await gw.entries()
    assert (entry.estimated, entry.cost_usd) == (False, cost)
    said = await gw.said("aider")
    assert "2 file searches · 2 code containers" in said[-1].text, said[-1].text


async def test_n_answers_are_each_counted_before_the_call_is_sent(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("aider", Decimal("0.50"))
    gw.llm.default_reply = Reply("x")
    body = {"model": "scripted-model", "messages": HELLO, "n": 16, "max_tokens": 20}
    answer = await post(gw, "/v1/chat/completions", gw.keys["aider"], body)
    assert answer.status_code == 400
    said = answer.json()["error"]["message"]
    assert said.startswith("aider is not answering this call: it would cost about $0.65")
    assert gw.llm.requests == []


async def test_a_store_that_refuses_what_was_learned_still_answers_the_call(
    start_gateway: StartGateway,
) -> None:
    """What a call taught is not money: the ledger has the call, the client its answer."""
    gw = await start_gateway()
    await refuse(gw.runtime.db, "INSERT", "gateway_calls", "disk full")
    gw.llm.default_reply = Reply("ok", Usage(input_tokens=10, output_tokens=2))
    body = {"model": "scripted-model", "max_tokens": 10, "messages": HELLO}
    answer = await post(gw, "/v1/messages", gw.keys["claude"], body)
    assert answer.status_code == 200
    [entry] = await gw.entries()
    assert (entry.status, entry.cost_usd) == ("settled", Decimal("0.014"))


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("options", [{"web_search_options": {}}, {}])
async def test_a_chat_search_models_call_is_billed_its_search(
    start_gateway: StartGateway, streamed: bool, options: dict[str, object]
) -> None:
    """OpenAI's search models on Chat Completions search the web on every
    call, and bill it ($10 per 1,000), though their usage says nothing of
    it: 1,000 tokens in and 100 out are $0.00021, the call $0.01021."""
    gw = await start_gateway()
    gw.llm.reply("found", usage=Usage(input_tokens=1000, output_tokens=100))
    body = {"model": "gpt-4o-mini-search-preview", "stream": streamed, "messages": HELLO}
    answer = await post(gw, "/v1/chat/completions", gw.keys["aider"], body | options)
    assert answer.status_code == 200
    [entry] = await gw.entries()
    assert entry.cost_usd == Decimal("0.01021")
    said = await gw.said("aider")
    assert "1 web search" in said[-1].text


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_call_served_at_the_priority_tier_is_charged_its_price(
    start_gateway: StartGateway, streamed: bool
) -> None:
    """OpenAI bills `service_tier: priority` about twice the default: gpt-5's
    1,000 tokens in and 100 out are $0.00225, at priority $0.0045. The
    response names the tier it was served at."""
    gw = await start_gateway()
    usage = {"prompt_tokens": 1000, "completion_tokens": 100}
    said = chat_reply(usage, model="gpt-5") | {"service_tier": "priority"}
    if streamed:
        chunks = chat_stream(usage, model="gpt-5")
        tier = b'"object": "chat.completion.chunk", "service_tier": "priority", '
        gw.llm.verbatim(*(c.replace(b'"object": "chat.completion.chunk", ', tier) for c in chunks))
    else:
        gw.llm.fault(200, body=said)
    body = {"model": "gpt-5", "service_tier": "priority", "stream": streamed, "messages": HELLO}
    answer = await post(gw, "/v1/chat/completions", gw.keys["aider"], body)
    assert answer.status_code == 200, answer.text
    [entry] = await gw.entries()
    assert entry.cost_usd == Decimal("0.0045")


@pytest.mark.parametrize("streamed", [False, True])
async def test_audio_tokens_are_charged_at_their_own_rates(
    start_gateway: StartGateway, streamed: bool
) -> None:
    """gpt-audio bills text at $2.50 in and $10 out per 1M, audio at $32 in
    and $64 out. Of 1,000 tokens in, 400 were audio ($0.0015 + $0.0128), of
    100 out, 60 ($0.0004 + $0.00384): $0.01854, not the $0.0035 of text."""
    gw = await start_gateway()
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 100,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 400},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 60},
    }
    if streamed:
        gw.llm.verbatim(*chat_stream(usage, model="gpt-audio"))
    else:
        gw.llm.fault(200, body=chat_reply(usage, model="gpt-audio"))
    body = {"model": "gpt-audio", "stream": streamed, "messages": HELLO}
    answer = await post(gw, "/v1/chat/completions", gw.keys["aider"], body)
    assert answer.status_code == 200, answer.text
    [entry] = await gw.entries()
    assert (entry.cost_usd, entry.estimated) == (Decimal("0.01854"), False)


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("told", [True, False])
async def test_a_claude_call_in_fast_mode_is_charged_its_price(
    start_gateway: StartGateway, streamed: bool, told: bool
) -> None:
    """Claude Code's fast mode (`speed: fast`) is billed about twice the
    standard rates: Claude Opus 4.8's 1,000 tokens in and 100 out are
    $0.0075, fast $0.015. The usage names the speed the call ran at; where
    it does not, the call ran as it asked."""
    gw = await start_gateway()
    start = {"input_tokens": 1000, "output_tokens": 1} | ({"speed": "fast"} if told else {})
    if streamed:
        gw.llm.verbatim(*messages_stream(start, {"output_tokens": 100}, model="claude-opus-4-8"))
    else:
        reply = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-8",
                 "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
                 "usage": start | {"output_tokens": 100}}  # fmt: skip
        gw.llm.fault(200, body=reply)
    body = {"model": "claude-opus-4-8", "max_tokens": 200, "speed": "fast", "stream": streamed}
    answer = await post(gw, "/v1/messages", gw.keys["claude"], body | {"messages": HELLO})
    assert answer.status_code == 200, answer.text
    [entry] = await gw.entries()
    assert entry.cost_usd == Decimal("0.015")


async def test_a_cheaper_tier_asked_for_and_not_said_is_charged_the_default(
    start_gateway: StartGateway,
) -> None:
    """`service_tier: flex` is half price, but a server that does not say
    it served the call so may have ignored it: $0.00225, not $0.001125."""
    gw = await start_gateway()
    usage = {"prompt_tokens": 1000, "completion_tokens": 100}
    gw.llm.fault(200, body=chat_reply(usage, model="gpt-5"))
    body = {"model": "gpt-5", "service_tier": "flex", "messages": HELLO}
    answer = await post(gw, "/v1/chat/completions", gw.keys["aider"], body)
    assert answer.status_code == 200, answer.text
    [entry] = await gw.entries()
    assert entry.cost_usd == Decimal("0.00225")


async def test_a_container_is_charged_once_though_later_calls_run_code_in_it(
    start_gateway: StartGateway,
) -> None:
    """OpenAI bills a container when it is made; a later call that runs code
    in the same one (an automatic container is reused while it lives) is not
    billed it again: the second call pays only for the new container `cntr_c`,
    and a third, an hour on, for `cntr_a` again (its 20 minutes long past).
    At agents.yaml's prices: 1,000 in and 100 out are $1.20, a container
    $0.05 a GB, of 4 GB."""
    priced = "output: 2000, code_interpreter: 0.05}"
    gw = await start_gateway(CONFIG.replace("output: 2000}", priced))
    ran = {"type": "code_interpreter_call", "status": "completed", "code": "1 + 1"}
    usage = {"input_tokens": 1000, "output_tokens": 100}
    first = [ran | {"id": "ci_1", "container_id": "cntr_a"}]
    again = [
        ran | {"id": "ci_2", "container_id": "cntr_a"},
        ran | {"id": "ci_3", "container_id": "cntr_c"},
    ]
    body = {"model": "scripted-model", "input": "hello", "tools": FILES_AND_CODE[1:]}
    for items, then in ((first, 10), (again, 61), (first, 0)):
        gw.llm.fault(200, body=responses_reply(usage, items))
        answer = await post(gw, "/v1/responses", gw.keys["aider"], body)
        assert answer.status_code == 200, answer.text
        await gw.clock.advance(timedelta(minutes=then))
    entries = sorted(await gw.entries(), key=lambda e: e.id)
    # An hour after its last use, `cntr_a` is no longer known: charged, never free.
    assert [e.cost_usd for e in entries] == [Decimal("1.40")] * 3
