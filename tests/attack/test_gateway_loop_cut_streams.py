"""The loop guard at the gateway attacked by a client that cuts every stream
itself (its own timeout, or a loop that aborts and asks the same again):
what it sent is its own, whole, however little of the answer it read, so
the same request again is a repeat, held at the fifth as whole answers are
(before, a call cut short was never shown to the guard, and such a client
looped unguarded up to its ceiling). A stream the provider cut (an error
event, a reset connection) is not the client's repeat: its retries are
never held (tests/attack/test_gateway_loop_retries.py)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import TYPE_CHECKING

import pytest

from plane.daemon.events import Subscription
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_gateway import GatewayPlane, StartGateway
from tests.support.local_http import local_client
from tests.support.sdk_replies import text_of
from tests.support.sdks import ON_ONE_WORKER, anthropic, anthropic_sdk

if TYPE_CHECKING:
    from anthropic.types import MessageParam

pytestmark = [pytest.mark.timeout(60), ON_ONE_WORKER]

CENT = Usage(input_tokens=10)
UNDER_WAY: list[MessageParam] = [
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": "Hello. What shall I look at?"},
    {"role": "user", "content": "the open issues"},
]
BODY = {"model": "scripted-model", "max_tokens": 10, "stream": True, "messages": UNDER_WAY}
HELD = "claude is held: its client sent the same request 5 times in a row; those calls cost "


def heads(gw: GatewayPlane) -> dict[str, str]:
    return {"x-api-key": gw.keys["claude"], "anthropic-version": "2023-06-01"}


async def told_held(watching: Subscription) -> str:
    """The notice that holds the agent, once its conversation is told it."""
    while True:
        event = await watching.next()
        if isinstance(event, p.MessageAppended) and event.message.agent == "claude":
            if "is held" in event.message.text:
                return event.message.text


async def cut_after_the_first_event(gw: GatewayPlane, times: int) -> None:
    """The client asks the same `times` times, each time reading the stream's
    first event and leaving (its connection closed); the rest of the answer
    comes once it has left."""
    rests = [threading.Event() for _ in range(times)]
    for rest in rests:
        gw.llm.reply("The same answer, written slowly.", usage=CENT, rest_until=rest)
    raw = json.dumps(BODY).encode()
    head = (
        f"POST /v1/messages HTTP/1.1\r\nHost: plane\r\nx-api-key: {gw.keys['claude']}\r\n"
        f"anthropic-version: 2023-06-01\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(raw)}\r\n\r\n"
    )
    for rest in rests:
        reader, writer = await asyncio.open_connection("127.0.0.1", gw.plane.http_port)
        writer.write(head.encode() + raw)
        read = b""
        while b"message_start" not in read:
            chunk = await reader.read(65536)
            assert chunk, read
            read += chunk
        writer.close()  # it gives up on this answer, and asks again
        await writer.wait_closed()
        rest.set()


async def test_a_client_that_cuts_every_stream_and_asks_again_is_held_at_the_fifth(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    watching = gw.watch()
    await cut_after_the_first_event(gw, 5)
    said = await asyncio.wait_for(told_held(watching), 10)
    spent = await gw.services.ledger.spend_today("claude")  # each cut call at its estimate
    assert said.startswith(f"{HELD}${spent:.2f} since 12:00 UTC."), said
    gw.llm.reply("never asked for", usage=CENT)
    async with local_client(base_url=gw.url, timeout=30) as http:
        refused = await http.post("/v1/messages", json={**BODY, "stream": False}, headers=heads(gw))
    assert refused.status_code == 429
    assert said in refused.json()["error"]["message"]
    assert len(gw.llm.requests) == 5


@pytest.mark.slow  # the SDK's own waits between its retries: ~1.6 s alone
async def test_retries_after_the_provider_reset_its_stream_are_not_a_loop(
    start_gateway: StartGateway,
) -> None:
    """The provider's connection reset mid-stream, six times over: the
    client asks again each time, and is answered at last."""
    gw = await start_gateway()
    for _ in range(6):
        gw.llm.cut_stream("The same", reset=True, usage=CENT)
    gw.llm.reply("at last", usage=CENT)
    client = anthropic_sdk(base_url=gw.url, api_key=gw.keys["claude"], max_retries=0)
    async with client:
        for _ in range(6):
            with pytest.raises(anthropic.APIConnectionError):
                async with client.messages.stream(
                    model="scripted-model", max_tokens=10, messages=UNDER_WAY
                ) as stream:
                    await stream.get_final_message()
        answer = await client.messages.create(
            model="scripted-model", max_tokens=10, messages=UNDER_WAY
        )
    assert text_of(answer) == "at last"
    assert len(gw.llm.requests) == 7
    assert (await gw.rows.state("claude")).status != "held"
