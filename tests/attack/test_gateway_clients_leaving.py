"""Attack: gateway clients that leave (a user who presses Esc, a client's
own timeout) while their call waits for room, or in the middle of its
stream. A call nobody will read is never sent; a call that was sent is
settled (never left pending), at the larger of its estimate and what its
provider had announced.

A real plane with its HTTP listener, real TCP connections that close, and
the scripted upstream.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import pytest

from plane.gateway.apis import Wire
from plane.gateway.forward import Responder
from plane.wire.protocol import Usage
from plane.wire.words import turn_cost
from tests.support.fixtures_gateway import GatewayPlane, StartGateway
from tests.support.local_http import local_client
from tests.support.scripted_llm import Reply

pytestmark = [pytest.mark.timeout(60)]

HELLO = [{"role": "user", "content": "hello"}]


class Handled:
    """Each call the gateway is handed, told when it arrives and when it is
    done, and how it answers its client (which says when the client has gone)."""

    def __init__(self, gw: GatewayPlane) -> None:
        self.arrived: list[asyncio.Event] = [asyncio.Event() for _ in range(4)]
        self.done: list[asyncio.Event] = [asyncio.Event() for _ in range(4)]
        self.outs: list[Responder] = []
        handle, count = gw.gateway.handle, 0

        async def handled(
            wire: Wire, headers: Mapping[str, str], raw: bytes, out: Responder
        ) -> None:
            nonlocal count
            n, count = count, count + 1
            self.outs.append(out)
            self.arrived[n].set()
            try:
                await handle(wire, headers, raw, out)
            finally:
                self.done[n].set()

        gw.gateway.handle = handled

    async def gone(self, n: int) -> None:
        """Until the plane has seen call `n`'s client close its connection."""
        async with asyncio.timeout(10):
            await self.arrived[n].wait()
            while not self.outs[n].gone():  # noqa: ASYNC110 - a transport's state, not an event
                await asyncio.sleep(0.01)


def request_bytes(key: str, body: dict[str, Any]) -> bytes:
    raw = json.dumps(body).encode()
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: plane\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(raw)}\r\n\r\n"
    )
    return head.encode() + raw


async def test_a_call_whose_client_left_while_it_waited_for_room_is_never_sent(
    start_gateway: StartGateway,
) -> None:
    """$0.40 a day; a call likely $0.21 in flight, and another that must wait
    for it. Its client leaves while it waits; the first settles cheaper, and
    there is room: the call that waited is not sent (nobody would read its
    answer, and it would be paid for) and is written failed, $0."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("aider", Decimal("0.40"))
    handled = Handled(gw)
    release, reached = threading.Event(), threading.Event()

    def held(body: dict[str, Any], serial: int) -> Reply:
        reached.set()
        return Reply("ok", Usage(input_tokens=2, output_tokens=10), until=release)

    gw.llm.responder = held
    body = {"model": "scripted-model", "messages": HELLO, "max_tokens": 100}
    heads = {"authorization": f"Bearer {gw.keys['aider']}"}
    async with local_client(base_url=gw.url, timeout=30) as http:
        flying = asyncio.create_task(http.post("/v1/chat/completions", json=body, headers=heads))
        assert await asyncio.to_thread(reached.wait, 10)
        _, writer = await asyncio.open_connection("127.0.0.1", gw.plane.http_port)
        writer.write(request_bytes(gw.keys["aider"], body))
        await writer.drain()
        await handled.arrived[1].wait()
        writer.close()  # the client leaves while its call waits
        await writer.wait_closed()
        release.set()
        assert (await flying).status_code == 200
        await asyncio.wait_for(handled.done[1].wait(), 10)
    assert len(gw.llm.requests) == 1, "a call nobody would read was sent"
    entries = sorted(await gw.entries(), key=lambda e: e.id)
    assert [(e.status, e.cost_usd) for e in entries] == [
        ("settled", Decimal("0.022")),
        ("failed", Decimal(0)),
    ]


@pytest.mark.parametrize(
    ("path", "cost", "said"),
    [
        # Anthropic announced 20,000 prompt tokens in its first event: $20, not the
        # estimate, and each word of the answer that came before the plane saw its
        # client gone ($0.002 each, of 200).
        ("/v1/messages", Decimal("20.002"), "cut after 20k in · "),
        # Chat Completions announces nothing before its end: the estimate.
        ("/v1/chat/completions", None, "cut before its usage, charged at its estimate"),
    ],
)
async def test_a_client_that_leaves_mid_stream_leaves_its_call_settled(
    start_gateway: StartGateway, path: str, cost: Decimal | None, said: str
) -> None:
    gw = await start_gateway()
    handled = Handled(gw)
    usage = Usage(input_tokens=20_000, output_tokens=400)
    rest, end = threading.Event(), threading.Event()
    """The answer goes on once the plane has seen its client leave, however
    long that takes on a busy machine; it never ends (the plane, writing it
    to nobody, cuts it)."""
    gw.llm.responder = lambda body, serial: Reply(
        "word " * 200, usage, rest_until=rest, end_until=end
    )
    body = {"model": "scripted-model", "max_tokens": 1000, "stream": True, "messages": HELLO}
    if path == "/v1/messages":
        agent, heads = "claude", {"x-api-key": gw.keys["claude"], "anthropic-version": "1"}
    else:
        agent, heads = "aider", {"authorization": f"Bearer {gw.keys['aider']}"}
    await gw.services.gate.ceilings.set(agent, None)
    watching = gw.watch()
    async with local_client(base_url=gw.url, timeout=30) as http:
        async with http.stream("POST", path, json=body, headers=heads) as answer:
            async for _ in answer.aiter_bytes():
                break  # the first event, then the client is gone
    await handled.gone(0)
    rest.set()
    line = await gw.settled(watching, agent)
    assert said in line.text, line.text
    [entry] = await gw.entries()
    assert (entry.status, entry.estimated) == ("settled", True)
    if cost is None:
        assert entry.price_source == "estimate" and entry.cost_usd > 0, entry
    else:
        assert cost <= entry.cost_usd <= cost + Decimal("0.4"), entry
        assert line.text.endswith(" charged that · " + turn_cost(entry.cost_usd)), line.text


async def test_a_client_that_leaves_before_a_whole_answer_leaves_its_call_settled_and_one_line(
    start_gateway: StartGateway, caplog: pytest.LogCaptureFixture
) -> None:
    """Not streaming: the client leaves while the upstream writes its answer.
    The upstream billed it whole (20 in, 10 out: $0.04), so the call is
    settled at that, nothing left pending; the plane's log says so in one
    quiet line, no error and no traceback (nothing is broken)."""
    gw = await start_gateway()
    handled = Handled(gw)
    release, reached = threading.Event(), threading.Event()

    def held(body: dict[str, Any], serial: int) -> Reply:
        reached.set()
        return Reply("ok", Usage(input_tokens=20, output_tokens=10), until=release)

    gw.llm.responder = held
    body = {"model": "scripted-model", "messages": HELLO, "max_tokens": 100}
    with caplog.at_level(logging.INFO):
        _, writer = await asyncio.open_connection("127.0.0.1", gw.plane.http_port)
        writer.write(request_bytes(gw.keys["aider"], body))
        await writer.drain()
        assert await asyncio.to_thread(reached.wait, 10)
        writer.close()  # the client leaves while its answer is being written
        await writer.wait_closed()
        release.set()
        await asyncio.wait_for(handled.done[0].wait(), 10)
    [entry] = await gw.entries()
    assert (entry.status, entry.estimated, entry.cost_usd) == ("settled", False, Decimal("0.04"))
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert loud == [], [r.getMessage() for r in loud]
    said = [r.getMessage() for r in caplog.records if "left" in r.getMessage()]
    assert said == ["aider: the client left before its answer"], said
