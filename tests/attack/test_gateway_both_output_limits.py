"""Attack: a Chat Completions request that states both output limits,
`max_completion_tokens: 10` beside `max_tokens: 4000`. A server that reads
only `max_tokens` writes up to 4,000 tokens; bounded by the 10, the call
went out with $0.02 of room left for what cost $8. It is weighed by the
larger of the two, whichever the server honours.

A real plane with its HTTP listener and the scripted upstream.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from plane.wire.protocol import Usage
from tests.support.fixtures_gateway import GatewayPlane, StartGateway
from tests.support.local_http import local_client
from tests.support.scripted_llm import Reply

pytestmark = [pytest.mark.timeout(30)]

HELLO = [{"role": "user", "content": "hello"}]


def reads_max_tokens(body: dict[str, Any], serial: int) -> Reply:
    """An upstream that honours `max_tokens` alone, and writes all of it."""
    return Reply("ok", Usage(input_tokens=2, output_tokens=int(body.get("max_tokens") or 0)))


async def asked(gw: GatewayPlane, completion: int, most: int) -> int:
    """The status of aider's call with `max_completion_tokens` and `max_tokens`."""
    path, heads = gw.calls_as("aider")
    body = {
        "model": "scripted-model",
        "messages": HELLO,
        "max_completion_tokens": completion,
        "max_tokens": most,
    }
    async with local_client(base_url=gw.url, timeout=10) as http:
        answer = await http.post(path, json=body, headers=heads)
    return answer.status_code


async def test_a_call_is_weighed_by_the_larger_of_its_two_output_limits(
    start_gateway: StartGateway,
) -> None:
    """Under a $1 ceiling ($0.002 an output token), 10 tokens fit and 4,000
    ($8) do not: the call that says both is refused before it is sent, and
    the day stays under its ceiling; one that says 10 twice goes."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("aider", Decimal(1))
    gw.llm.responder = reads_max_tokens
    assert await asked(gw, 10, 4000) == 400
    assert gw.llm.requests == [], "sent with room for 10 tokens, to write 4,000"
    assert await asked(gw, 10, 10) == 200
    assert await gw.services.ledger.spend_today("aider") <= Decimal(1)
