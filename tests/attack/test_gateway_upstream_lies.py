"""Attack: an upstream that answers 200 with usage that is not a count of
tokens (a string, a fraction, a negative, a zero for everything, a number no
call can reach), whole or streamed. What it cost is then unknown, and unknown
is never free: each call is settled at its estimate (never $0, never left
pending), the client gets its answer, and the agent's next call goes.

A real plane with its HTTP listener, the scripted upstream sending the
provider's protocol with the usage replaced (`ScriptedLLM.fault(200, body=…)`
for a whole reply, `verbatim(...)` for a stream).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
import pytest

from plane.wire import protocol as p
from tests.support.fixtures_gateway import GatewayPlane, StartGateway
from tests.support.local_http import local_client
from tests.support.stream_events import chat_reply, chat_stream, messages_stream

pytestmark = [pytest.mark.timeout(60)]

HELLO = [{"role": "user", "content": "hello"}]
NOT_COUNTS: list[dict[str, Any]] = [
    {"prompt_tokens": "9000", "completion_tokens": "500"},
    {"prompt_tokens": 9000.5, "completion_tokens": 500},
    {"prompt_tokens": -9000, "completion_tokens": -5},
    {"prompt_tokens": 0, "completion_tokens": 0},
    {},
    {"prompt_tokens": 10**30, "completion_tokens": 500},
]
"""Chat Completions usage objects, none of them what the call cost."""


async def call(gw: GatewayPlane, agent: str, stream: bool) -> httpx.Response:
    body = {"model": "scripted-model", "messages": HELLO, "max_tokens": 10, "stream": stream}
    path, heads = gw.calls_as(agent)
    async with local_client(base_url=gw.url, timeout=20) as http:
        return await http.post(path, json=body, headers=heads)


def at_estimate(entry: p.LedgerEntry) -> bool:
    return (
        entry.status == "settled"
        and entry.estimated
        and entry.price_source == "estimate"
        and entry.cost_usd > 0
    )


async def test_a_whole_reply_whose_usage_is_not_counts_is_charged_its_estimate(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("aider", Decimal(5))
    for usage in NOT_COUNTS:
        gw.llm.fault(200, body=chat_reply(usage))
        answer = await call(gw, "aider", stream=False)
        assert answer.status_code == 200, (usage, answer.text)
        assert answer.json()["choices"][0]["message"]["content"] == "hi"
    entries = await gw.entries()
    assert [at_estimate(e) for e in entries] == [True] * len(NOT_COUNTS), entries
    gw.llm.reply("next")
    assert (await call(gw, "aider", stream=False)).status_code == 200
    lines = [m.text for m in await gw.said("aider") if m.kind == "cost"]
    assert not any("unpriced" in line for line in lines), lines
    unknown = "scripted-model · no usage the plane could read, charged at its estimate"
    assert sum(line.startswith(unknown) for line in lines) == len(NOT_COUNTS), lines


async def test_a_chat_stream_whose_usage_is_not_counts_is_charged_its_estimate(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("aider", Decimal(5))
    for usage in NOT_COUNTS:
        gw.llm.verbatim(*chat_stream(usage))
        answer = await call(gw, "aider", stream=True)
        assert answer.status_code == 200, (usage, answer.text)
        assert answer.text.endswith("data: [DONE]\n\n"), (usage, answer.text)
    entries = await gw.entries()
    assert [at_estimate(e) for e in entries] == [True] * len(NOT_COUNTS), entries


@pytest.mark.parametrize(
    ("start", "delta"),
    [
        # The split of the cache writes is not a count: the whole usage is unknown.
        (
            {
                "input_tokens": 20,
                "output_tokens": 1,
                "cache_creation": {"ephemeral_1h_input_tokens": "5"},
            },
            {"output_tokens": 5},
        ),
        # The answer's tokens in words: what the answer cost is unknown, not 0.
        ({"input_tokens": 20, "output_tokens": 1}, {"output_tokens": "900"}),
        ({"input_tokens": 20, "output_tokens": 1}, {"output_tokens": 10**30}),
    ],
)
async def test_a_messages_stream_whose_usage_is_not_counts_is_charged_its_estimate(
    start_gateway: StartGateway, start: dict[str, Any], delta: dict[str, Any]
) -> None:
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("claude", Decimal(5))
    gw.llm.verbatim(*messages_stream(start, delta))
    answer = await call(gw, "claude", stream=True)
    assert answer.status_code == 200, answer.text
    assert "message_stop" in answer.text
    [entry] = await gw.entries()
    assert at_estimate(entry), entry


async def test_a_delta_that_says_0_for_the_prompt_it_announced_does_not_make_it_free(
    start_gateway: StartGateway,
) -> None:
    """Anthropic's counts are cumulative; some servers speaking its API end
    the stream with `input_tokens: 0`. The 20,000 prompt tokens announced
    at the start ($20) are still billed, with the 100 tokens out ($0.20)."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("claude", None)
    start = {"input_tokens": 20_000, "cache_read_input_tokens": 0, "output_tokens": 1}
    delta = {"input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 100}
    gw.llm.verbatim(*messages_stream(start, delta))
    answer = await call(gw, "claude", stream=True)
    assert answer.status_code == 200, answer.text
    [entry] = await gw.entries()
    assert (entry.status, entry.cost_usd) == ("settled", Decimal("20.2"))
    assert entry.usage.input_tokens == 20_000


def escaped(event: bytes) -> bytes:
    """The event's data with the names that matter spelled in JSON's escapes."""
    for name, spelled in ((b'"usage"', b'"\\u0075sage"'), (b'"message_', b'"message\\u005f')):
        event = event.replace(name, spelled)
    return event


def in_utf16(event: bytes) -> bytes:
    """The event's data in UTF-16, which a JSON reader takes as it takes UTF-8."""
    data = event.removeprefix(b"data: ").removesuffix(b"\n\n")
    return b"data: " + data.decode().encode("utf-16-le") + b"\n\n"


@pytest.mark.parametrize("spelled", [escaped, in_utf16])
async def test_a_chat_stream_that_spells_its_usage_another_way_is_charged_it(
    start_gateway: StartGateway, spelled: Any
) -> None:
    """9,000 tokens in and 500 out, said in a chunk its meter does not
    recognise by its bytes: $10, as said, not the call's estimate."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("aider", None)
    *chunks, usage, done = chat_stream({"prompt_tokens": 9000, "completion_tokens": 500})
    gw.llm.verbatim(*chunks, spelled(usage), done)
    answer = await call(gw, "aider", stream=True)
    assert answer.status_code == 200, answer.text
    [entry] = await gw.entries()
    assert (entry.status, entry.cost_usd, entry.estimated) == ("settled", Decimal(10), False)


async def test_a_messages_stream_that_spells_its_events_another_way_is_charged_them(
    start_gateway: StartGateway,
) -> None:
    """The prompt said at the start, the answer at the end, each event's type
    spelled in JSON's escapes: 20 tokens in, 100 out, $0.22."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("claude", None)
    start = {"input_tokens": 20, "output_tokens": 1}
    events = messages_stream(start, {"output_tokens": 100})
    # The data alone (no `event:` line, which names the type too), as some servers send it.
    gw.llm.verbatim(*(escaped(event.split(b"\n", 1)[1]) for event in events))
    answer = await call(gw, "claude", stream=True)
    assert answer.status_code == 200, answer.text
    [entry] = await gw.entries()
    assert (entry.status, entry.cost_usd, entry.estimated) == ("settled", Decimal("0.22"), False)
