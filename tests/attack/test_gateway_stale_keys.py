"""Attack: a gateway client whose key `plane key` replaced while its call
waited for room (the calls in flight filling the day). The old key stops
working at once: the call that waited is refused as a call with a key
that is no agent's (401, the same sentence), never sent, never written;
a stream already going when the key changed is a call in flight, and
finishes, settled from its usage.

A real plane with its HTTP listener, the agent's key file replaced as
`plane key` replaces it, and the scripted upstream.
"""

from __future__ import annotations

import asyncio
import threading
from decimal import Decimal
from typing import Any

import pytest

from plane.gateway.forward import UNKNOWN_KEY
from plane.gateway.keys import Keys
from plane.wire.protocol import Usage
from tests.support.fixtures_gateway import GatewayPlane, StartGateway
from tests.support.local_http import local_client
from tests.support.scripted_llm import Reply

pytestmark = [pytest.mark.timeout(60)]

HELLO = [{"role": "user", "content": "hello"}]
ANSWER = Usage(input_tokens=2, output_tokens=10)
"""$0.022: what the stream in flight settles at."""


def opened(gw: GatewayPlane, monkeypatch: pytest.MonkeyPatch) -> list[asyncio.Event]:
    """Set as each call reaches admission, its key read and found (the second
    then waits for room)."""
    admission = gw.gateway.admission
    admit, reached = admission.open, [asyncio.Event() for _ in range(2)]

    async def counted(*args: Any, **kwargs: Any) -> tuple[int, Any]:
        next(e for e in reached if not e.is_set()).set()
        return await admit(*args, **kwargs)

    monkeypatch.setattr(admission, "open", counted)
    return reached


async def test_a_call_waiting_for_room_when_its_key_is_replaced_is_refused_as_stale(
    start_gateway: StartGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$0.40 a day; a stream likely $0.21 in flight, a second call that must
    wait for it. `plane key aider` replaces the key meanwhile; the stream
    goes on to its end, and the call that waited gets the stale key's 401."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("aider", Decimal("0.40"))
    reached = opened(gw, monkeypatch)
    rest, sent = threading.Event(), threading.Event()

    def streamed(body: dict[str, Any], serial: int) -> Reply:
        sent.set()
        return Reply("word " * 10, ANSWER, rest_until=rest)

    gw.llm.responder = streamed
    body = {"model": "scripted-model", "messages": HELLO, "max_tokens": 100}
    streaming = {**body, "stream": True, "stream_options": {"include_usage": True}}
    old = {"authorization": f"Bearer {gw.keys['aider']}"}
    async with local_client(base_url=gw.url, timeout=30) as http:
        stream = asyncio.create_task(http.post("/v1/chat/completions", json=streaming, headers=old))
        assert await asyncio.to_thread(sent.wait, 10)
        waiting = asyncio.create_task(http.post("/v1/chat/completions", json=body, headers=old))
        await asyncio.wait_for(reached[1].wait(), 10)
        Keys(gw.home.gateway_keys).make("aider")  # as `plane key aider` does
        rest.set()
        finished, refused = await stream, await waiting
    assert finished.status_code == 200, finished.text
    assert "data: [DONE]" in finished.text, "the stream in flight finishes"
    assert refused.status_code == 401, refused.text
    assert refused.json()["error"]["message"] == UNKNOWN_KEY
    assert len(gw.llm.requests) == 1, "a call with a replaced key was sent"
    entries = await gw.entries()
    assert [(e.status, e.cost_usd) for e in entries] == [("settled", Decimal("0.022"))]
