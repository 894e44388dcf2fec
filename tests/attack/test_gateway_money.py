"""Attack: a gateway agent's client tries every way past a $1 ceiling in
dollars, and the day ends at most one call over it, while an agent far
under its ceiling that fans out is never held.

A real plane with its real HTTP listener, and an upstream that bills
exactly what each request asks and logs it (tests/support/billing.py): the
ground truth the ledger is compared with. Each request shape of the table is
sent 10, 40 and 100 times at once, at $0 of $1, every answer taking a moment
so that they are all in flight together:

- `n: 16`: sixteen answers to one request (Chat Completions);
- a small body naming a document by URL, which the provider fetches: 20,000
  prompt tokens the body does not show (Messages);
- a `previous_response_id` to a 20,000-token response of the day before
  (Responses): the ledger knows how large it was;
- no output limit, and the model writes 30,000 tokens (Chat Completions);
- one 10 MB body among small calls (Messages).

    .venv/bin/pytest tests/attack/test_gateway_money.py -s -k table

prints the table (the README's).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from plane.gateway.keys import Keys
from plane.wire.protocol import Usage
from plane.wire.words import spend_against
from tests.support.billing import Bills, billed_usd
from tests.support.fixtures_gateway import CONFIG, GatewayPlane, StartGateway
from tests.support.local_http import local_client
from tests.support.scripted_llm import Reply

pytestmark = [pytest.mark.timeout(120)]

CEILING = Decimal(1)
CONCURRENCY = (10, 40, 100)
HELLO = [{"role": "user", "content": "hello"}]
TEN_MB = "word " * (2 << 20)


@dataclass(frozen=True)
class Row:
    key: str
    what: str
    path: str
    model: str
    """The price table's model: `scripted-model` ($1,000 / $2,000 per 1M tokens,
    round figures) or `cheap-model` ($1 / $10)."""
    bills: Bills
    body: Callable[[str, int, str | None], dict[str, Any]]
    """The request: (model, its number, the previous response's id)."""
    provider: str = "scripted"


def chat_n16(model: str, i: int, previous: str | None) -> dict[str, Any]:
    return {"model": model, "messages": HELLO, "n": 16, "max_tokens": 20}


def url_document(model: str, i: int, previous: str | None) -> dict[str, Any]:
    document = {"type": "document", "source": {"type": "url", "url": "https://example.com/r.pdf"}}
    content = [document, {"type": "text", "text": "Summarise it."}]
    return {"model": model, "max_tokens": 10, "messages": [{"role": "user", "content": content}]}


def continued(model: str, i: int, previous: str | None) -> dict[str, Any]:
    return {"model": model, "input": "And then?", "previous_response_id": previous}


def no_limit(model: str, i: int, previous: str | None) -> dict[str, Any]:
    return {"model": model, "messages": HELLO}


def ten_mb_among_small(model: str, i: int, previous: str | None) -> dict[str, Any]:
    text = TEN_MB if i == 0 else "hello"
    return {"model": model, "max_tokens": 2000, "messages": [{"role": "user", "content": text}]}


ROWS = (
    Row("n16", "`n: 16` (Chat Completions)", "/v1/chat/completions", "scripted-model",
        Bills(writes=20), chat_n16),
    Row("url", "a document by URL: 20,000 tokens held (Messages)", "/v1/messages",
        "scripted-model", Bills(held=20_000), url_document, "scripted-anthropic"),
    Row("prev", "`previous_response_id`: 20,000 tokens (Responses)", "/v1/responses",
        "scripted-model", Bills(held=20_000), continued),
    Row("nolimit", "no output limit, 30,000 tokens written", "/v1/chat/completions",
        "cheap-model", Bills(writes=30_000), no_limit),
    Row("tenmb", "one 10 MB body among small calls (Messages)", "/v1/messages", "cheap-model",
        Bills(writes=2000), ten_mb_among_small, "scripted-anthropic"),
)  # fmt: skip


def config(agents: list[tuple[str, str]]) -> str:
    listed = "".join(
        f"  {name}: {{provider: {provider}, gateway: {{}}}}\n" for name, provider in agents
    )
    return CONFIG.replace("agents:\n", f"agents:\n{listed}").replace(
        "pricing:\n", "pricing:\n  cheap-model: {input: 1, output: 10}\n"
    )


def headers(path: str, key: str) -> dict[str, str]:
    if path == "/v1/messages":
        return {"x-api-key": key, "anthropic-version": "2023-06-01"}
    return {"authorization": f"Bearer {key}"}


@dataclass
class Outcome:
    row: Row
    concurrency: int
    answered: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    spent: Decimal = Decimal(0)
    billed: Decimal = Decimal(0)
    largest: Decimal = Decimal(0)
    said: list[str] = field(default_factory=list)
    retry_after: list[int] = field(default_factory=list)
    largest_prompt: int = 0
    """The most prompt tokens the upstream billed one call."""
    spent_figures: set[str] = field(default_factory=set)
    """Every spend the day went through, as a sentence shows it: what the
    calls settled so far came to, in the order the upstream finished them."""

    @property
    def over(self) -> Decimal:
        return max(Decimal(0), self.spent - CEILING)

    def line(self) -> str:
        refused = ", ".join(f"{n} {kind}" for kind, n in sorted(self.refused.items())) or "none"
        return (
            f"| {self.row.what} | {self.concurrency} | {self.answered} | {refused} "
            f"| ${self.spent:,.2f} | ${self.largest:,.2f} | ${self.billed:,.2f} |"
        )


def kind_of(message: str) -> str:
    if "would cost about" in message:
        return "too dear"
    if "waits for them" in message:
        return "waited"
    if "has spent" in message:
        return "held"
    return message


async def run(
    gw: GatewayPlane, row: Row, concurrency: int, key: str, previous: str | None
) -> Outcome:
    agent = f"{row.key}{concurrency}"
    model = f"{row.model}-{agent}"
    outcome = Outcome(row, concurrency)
    began = time.monotonic()
    limits = httpx.Limits(max_connections=concurrency + 5)
    async with local_client(base_url=gw.url, timeout=60, limits=limits) as http:

        async def one(i: int) -> httpx.Response:
            body = json.dumps(row.body(model, i, previous)).encode()
            return await http.post(row.path, content=body, headers=headers(row.path, key))

        answers = await asyncio.gather(*(one(i) for i in range(concurrency)))
    for answer in answers:
        if answer.status_code == 200:
            outcome.answered += 1
            continue
        message = answer.json()["error"]["message"]
        outcome.said.append(message)
        kind = kind_of(message)
        outcome.refused[kind] = outcome.refused.get(kind, 0) + 1
        if "retry-after" in answer.headers:
            outcome.retry_after.append(int(answer.headers["retry-after"]))
    outcome.spent = await gw.services.ledger.spend_today(agent)
    pricer = gw.services.pricer
    billed = [b for b in gw.llm.billed if b.model == model and b.at >= began]
    outcome.billed = billed_usd(billed, pricer)
    outcome.largest = max(
        (pricer.price(model, b.usage).cost_usd for b in billed), default=Decimal(0)
    )
    outcome.largest_prompt = max((b.usage.input_tokens for b in billed), default=0)
    notices = [m.text for m in await gw.said(agent) if m.kind == "plane"]
    outcome.said += notices
    total = Decimal(0)
    for b in sorted(billed, key=lambda b: b.at):
        total += pricer.price(model, b.usage).cost_usd
        outcome.spent_figures.add(spend_against(total, CEILING))
    return outcome


async def the_table(start_gateway: StartGateway) -> list[Outcome]:
    agents = [(f"{row.key}{n}", row.provider) for row in ROWS for n in CONCURRENCY]
    gw = await start_gateway(config(agents))
    keys = {name: Keys(gw.home.gateway_keys).make(name) for name, _ in agents}
    by_model = {f"{row.model}-{row.key}{n}": row.bills for row in ROWS for n in CONCURRENCY}

    def responder(body: dict[str, Any], serial: int) -> Reply:
        return by_model[body["model"]](body, serial)

    gw.llm.responder = responder
    previous = {n: await yesterdays_response(gw, keys[f"prev{n}"], n) for n in CONCURRENCY}
    await gw.clock.advance(timedelta(days=1))
    outcomes = []
    for row in ROWS:
        for n in CONCURRENCY:
            await gw.services.gate.ceilings.set(f"{row.key}{n}", CEILING)
            outcomes.append(await run(gw, row, n, keys[f"{row.key}{n}"], previous.get(n)))
    return outcomes


async def yesterdays_response(gw: GatewayPlane, key: str, n: int) -> str:
    """A 20,000-token response the next calls continue, made the day before, with no ceiling."""
    await gw.services.gate.ceilings.set(f"prev{n}", None)
    body = {"model": f"scripted-model-prev{n}", "input": "Read the report."}
    async with local_client(base_url=gw.url, timeout=60) as http:
        answer = await http.post("/v1/responses", json=body, headers=headers("/v1/responses", key))
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


@pytest.mark.slow
async def test_table_every_request_shape_ends_the_day_at_most_one_call_over(
    start_gateway: StartGateway, capsys: pytest.CaptureFixture[str]
) -> None:
    outcomes = await the_table(start_gateway)
    with capsys.disabled():
        print(
            "\n| request | at once | answered | refused | day ends at | largest call "
            "| upstream billed |\n|---|---|---|---|---|---|---|"
        )
        for outcome in outcomes:
            print(outcome.line())
    for outcome in outcomes:
        name = f"{outcome.row.key} x{outcome.concurrency}"
        assert outcome.over <= outcome.largest, (
            f"{name}: over by ${outcome.over}, calls ${outcome.largest}"
        )
        assert outcome.spent == outcome.billed, f"{name}: the ledger is not what was billed"
        for said in outcome.said:  # a figure said spent, to the client or in the conversation, was
            spent = r"has spent (\$[\d,.]+) today|\((\$[\d,.]+) spent\)"
            for figure in (a or b for a, b in re.findall(spent, said)):
                assert figure in outcome.spent_figures, (said, outcome.spent_figures)
        assert all(0 < wait <= 12 * 3600 for wait in outcome.retry_after), name
    for outcome in (o for o in outcomes if o.row.key == "tenmb"):
        # refused before it was sent, saying what it would cost and what is left
        assert outcome.largest_prompt < 1000, "the 10 MB body reached the upstream"
        assert any(
            re.search(r"it would cost about \$3\.\d\d, and \$1\.00 is left", s)
            for s in outcome.said
        ), outcome.said


# ── no false holds ──────────────────────────────────────────────────────────

OPUS = "claude-opus-4-8"
"""What Claude Code 2.1 asks for ($5 / $25 per 1M tokens), with `max_tokens: 64000`."""
CLAUDE_CODE_BETA = "claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14"


def claude_code_body(max_tokens: int, history_kb: int) -> dict[str, Any]:
    """A request shaped as Claude Code sends one (2.1: 24 tools, ~64 KB of them,
    a system prompt with cache breakpoints, streamed), `history_kb` of session."""
    prose = "Read the file, then change only what the task asks for; run the tests. "
    tools = [
        {
            "name": f"Tool{i}",
            "description": prose * 30,
            "input_schema": {
                "type": "object",
                "properties": {
                    f"arg{j}": {"type": "string", "description": prose} for j in range(4)
                },
                "required": ["arg0"],
            },
        }
        for i in range(24)
    ]
    system = [
        {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": prose * 80, "cache_control": {"type": "ephemeral"}},
    ]
    messages: list[dict[str, Any]] = []
    while len(json.dumps(messages)) < history_kb * 1024:
        n = len(messages)
        use = {"type": "tool_use", "id": f"toolu_{n}", "name": "Tool1", "input": {"arg0": "a.py"}}
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": prose * 60}
        messages += [
            {"role": "user", "content": [{"type": "text", "text": "Go on."}]},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
            {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        ]
    messages.append({"role": "user", "content": [{"type": "text", "text": "Next step?"}]})
    return {
        "model": OPUS,
        "max_tokens": max_tokens,
        "stream": True,
        "system": system,
        "tools": tools,
        "messages": messages,
        "metadata": {"user_id": "user_1"},
    }


async def stream(http: httpx.AsyncClient, key: str, body: dict[str, Any]) -> tuple[int, str]:
    heads = headers("/v1/messages", key) | {"anthropic-beta": CLAUDE_CODE_BETA}
    async with http.stream("POST", "/v1/messages", json=body, headers=heads) as answer:
        text = (await answer.aread()).decode()
    return answer.status_code, text


@pytest.mark.slow
@pytest.mark.parametrize("max_tokens", [64000, 1500])
async def test_three_claude_code_calls_at_011_of_5_all_pass(
    start_gateway: StartGateway, max_tokens: int
) -> None:
    """Each is written to the ledger at what it will likely cost, and flies
    beside the others once its provider has announced its prompt: none is
    refused, none waits for another to finish. (Before: the third got 429,
    `claude has spent $5.01 today, over its $5.00 daily ceiling`.)"""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("claude", Decimal(5))
    # The session's first call: 20,000 tokens in, 400 out, $0.11.
    gw.llm.reply("first", usage=Usage(input_tokens=20_000, output_tokens=400))
    async with local_client(base_url=gw.url, timeout=60) as http:
        code, _ = await stream(http, gw.keys["claude"], claude_code_body(max_tokens, 0))
        assert code == 200
        assert await gw.services.ledger.spend_today("claude") == Decimal("0.11")
        # Later in the session: 1.2 MB a request, most of it read from the cache.
        usage = Usage(input_tokens=300_000, cache_read_tokens=290_000, output_tokens=400)
        # Each answer announces its prompt, then is written only once all three were asked.
        all_asked = threading.Event()

        def responder(body: object, serial: int) -> Reply:
            if serial == 4:
                all_asked.set()
            return Reply("on it", usage, rest_until=all_asked)

        gw.llm.responder = responder
        body = claude_code_body(max_tokens, 1150)
        calls = asyncio.gather(*(stream(http, gw.keys["claude"], body) for _ in range(3)))
        try:
            answers = await asyncio.wait_for(calls, 45)
        except TimeoutError:
            pytest.fail(f"a call waited for another to finish: {len(gw.llm.received) - 1} asked")
    assert [code for code, _ in answers] == [200] * 3, answers
    assert all("message_stop" in text for _, text in answers)
    assert await gw.services.ledger.spend_today("claude") == Decimal("0.11") + 3 * Decimal("0.205")


async def test_a_call_the_calls_in_flight_crowd_out_gets_its_own_sentence_and_a_short_retry(
    start_gateway: StartGateway,
) -> None:
    """$0.40 a day; a call likely $0.21 in flight, and another: it would fit
    alone, not beside it. It waits, then is refused with a sentence of its own
    (no "has spent": nothing was), and a Retry-After of seconds."""
    gw = await start_gateway()
    gw.gateway.admission.wait_s = 0.3
    await gw.services.gate.ceilings.set("aider", Decimal("0.40"))
    arrived = threading.Event()

    def slow(body: dict[str, Any], serial: int) -> Reply:
        arrived.set()
        return Bills(writes=100, delay_s=1.0)(body, serial)

    gw.llm.responder = slow
    body = {"model": "scripted-model", "messages": HELLO, "max_tokens": 100}
    heads = headers("/v1/chat/completions", gw.keys["aider"])
    async with local_client(base_url=gw.url, timeout=60) as http:
        flying = asyncio.create_task(http.post("/v1/chat/completions", json=body, headers=heads))
        assert await asyncio.to_thread(arrived.wait, 5)
        crowded = await http.post("/v1/chat/completions", json=body, headers=heads)
        assert (await flying).status_code == 200
    assert crowded.status_code == 429
    assert crowded.headers["retry-after"] == "5"
    said = crowded.json()["error"]["message"]
    assert said == (
        "aider's calls in flight (about $0.21) and this one (about $0.21) would take more "
        "than the $0.40 left of its $0.40 daily ceiling today; it waits for them to settle: "
        "retry in 5 seconds."
    )
    assert len(gw.llm.requests) == 1


async def test_a_call_crowded_out_goes_once_the_calls_in_flight_settle_cheaper(
    start_gateway: StartGateway,
) -> None:
    """The same, but the call in flight bills a tenth of its estimate: the
    waiting call goes as soon as it settles, and nothing is refused."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("aider", Decimal("0.40"))
    gw.llm.responder = Bills(writes=10, delay_s=0.3)
    body = {"model": "scripted-model", "messages": HELLO, "max_tokens": 100}
    heads = headers("/v1/chat/completions", gw.keys["aider"])
    async with local_client(base_url=gw.url, timeout=60) as http:
        answers = await asyncio.gather(
            *(http.post("/v1/chat/completions", json=body, headers=heads) for _ in range(2))
        )
    assert [a.status_code for a in answers] == [200, 200]


async def test_an_agents_tagged_and_untagged_calls_at_once_end_its_day_at_most_one_call_over(
    start_gateway: StartGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DESIGN, Gateway: "*The day ends at most one call over*, whatever the
    concurrency and whatever the request." A tag with a ceiling of its own
    (Budgets by purpose) must not open a second way in: $3 a day, and two
    calls at once with no output limit, one tagged and one not, that each
    write 5,000 tokens ($10). Nothing bounds either, so one flies and the
    other waits for it (then finds the day spent); weighed apart, both flew
    and the day ended at $20, two calls over.

    The first call to be written waits (half a second at most) for the other to
    be written too: they meet there only if the other was weighed without it."""
    gw = await start_gateway(CONFIG + "tags:\n  ticket-1: {limitUsd: 100}\n")
    await gw.services.gate.ceilings.set("aider", Decimal(3))
    gw.llm.default_reply = Reply("ok", Usage(input_tokens=20, output_tokens=5000), delay_s=0.2)
    ledger = gw.services.ledger
    open_call, written, other = ledger.open_call, 0, asyncio.Event()

    async def meeting(*args: Any, **kwargs: Any) -> int:
        nonlocal written
        written += 1
        if written == 1:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(other.wait(), 0.5)
        other.set()
        return await open_call(*args, **kwargs)

    monkeypatch.setattr(ledger, "open_call", meeting)
    body = {"model": "scripted-model", "messages": HELLO}
    heads = headers("/v1/chat/completions", gw.keys["aider"])
    async with local_client(base_url=gw.url, timeout=60) as http:
        await asyncio.gather(
            *(
                http.post("/v1/chat/completions", json=body, headers=heads | tag)
                for tag in ({"x-plane-tag": "ticket-1"}, {})
            )
        )
    spent = await ledger.spend_today("aider")
    assert spent == billed_usd(gw.llm.billed, gw.services.pricer)
    assert spent <= Decimal(3) + Decimal("10.02"), f"${spent}: {len(gw.llm.billed)} calls flew"


async def test_agents_that_share_no_budget_are_admitted_side_by_side_under_a_tag_ceiling(
    start_gateway: StartGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tag with a ceiling weighs its calls together, whichever agent makes
    them; it must not make every agent's calls wait on each other's: claude's
    untagged call and aider's tagged one share no budget, and the first to be
    written waits (5 s at most) for the other to be written too. Weighed under
    one lock for every agent, the other was not weighed until the first was
    written, and they never met."""
    gw = await start_gateway(CONFIG + "tags:\n  ticket-1: {limitUsd: 100}\n")
    ledger = gw.services.ledger
    open_call, written, other, met = ledger.open_call, 0, asyncio.Event(), []

    async def meeting(*args: Any, **kwargs: Any) -> int:
        nonlocal written
        written += 1
        if written == 1:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(other.wait(), 5)
            met.append(other.is_set())
        other.set()
        return await open_call(*args, **kwargs)

    monkeypatch.setattr(ledger, "open_call", meeting)
    claude: tuple[str, str, dict[str, str]] = ("/v1/messages", gw.keys["claude"], {})
    aider = ("/v1/chat/completions", gw.keys["aider"], {"x-plane-tag": "ticket-1"})
    body = {"model": "scripted-model", "max_tokens": 10, "messages": HELLO}
    async with local_client(base_url=gw.url, timeout=60) as http:
        answers = await asyncio.gather(
            *(
                http.post(path, json=body, headers=headers(path, key) | tag)
                for path, key, tag in (claude, aider)
            )
        )
    assert [a.status_code for a in answers] == [200, 200]
    assert met == [True], "one agent's call was weighed only once the other's was written"


# ── cut streams ─────────────────────────────────────────────────────────────


async def test_a_stream_cut_after_its_usage_was_announced_is_charged_that(
    start_gateway: StartGateway,
) -> None:
    """The provider announced 20,000 prompt tokens ($20) in `message_start`,
    then the connection broke: $20, not the $0.03 estimate."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("claude", None)
    gw.llm.cut_stream("half", reset=True, usage=Usage(input_tokens=20_000, output_tokens=1))
    body = {"model": "scripted-model", "max_tokens": 10, "stream": True, "messages": HELLO}
    watching = gw.watch()
    async with local_client(base_url=gw.url, timeout=60) as http:
        with pytest.raises(httpx.HTTPError):
            await stream(http, gw.keys["claude"], body)
    line = await gw.settled(watching, "claude")
    assert "cut after 20k in · 1 out was announced, charged that" in line.text, line.text
    [entry] = await gw.entries()
    assert (entry.status, entry.estimated) == ("settled", True)
    assert entry.cost_usd == Decimal("20.002")
    assert entry.usage.input_tokens == 20_000
    assert entry.cost_usd == billed_usd(gw.llm.billed, gw.services.pricer)
