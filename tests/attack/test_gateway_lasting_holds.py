"""Attack: a gateway client told to come back at 00:00 UTC by a refusal that
midnight does not lift. A model with no price is held until a price is
given or the ceiling removed, a pause until the limit is raised: such a
refusal promises no time (no Retry-After to midnight), tells the client to
wait long, as a loop's does, and its sentence says what lifts it.

A real plane with its HTTP listener and the scripted upstream.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.support.fixtures_gateway import GatewayPlane, StartGateway
from tests.support.local_http import local_client

pytestmark = [pytest.mark.timeout(30)]

HELLO = [{"role": "user", "content": "hello"}]
MIDNIGHT = str(12 * 3600)
"""The Retry-After of a hold the day's end lifts, from the plane's noon."""


async def refused(gw: GatewayPlane, agent: str, model: str) -> tuple[int, dict[str, str], str]:
    """Status, headers and the error's sentence of `agent`'s call on `model`."""
    path, heads = gw.calls_as(agent)
    body = {"model": model, "messages": HELLO, "max_tokens": 10}
    async with local_client(base_url=gw.url, timeout=10) as http:
        answer = await http.post(path, json=body, headers=heads)
    return answer.status_code, dict(answer.headers), answer.json()["error"]["message"]


async def test_a_model_with_no_price_is_refused_with_no_promise_of_midnight(
    start_gateway: StartGateway,
) -> None:
    """Under its $10 ceiling, claude names a model with no price: refused, as
    before, but told to wait long (an hour, as a loop is), not until 00:00
    UTC, which does not lift it; the sentence says what does."""
    gw = await start_gateway()
    status, headers, said = await refused(gw, "claude", "other-model")
    assert status == 429
    assert headers["retry-after"] != MIDNIGHT, "midnight does not price a model"
    assert headers["retry-after"] == "3600"
    assert "no price is known for other-model" in said
    assert "`pricing:` in agents.yaml" in said and "/limit off" in said
    assert "00:00" not in said
    assert gw.llm.requests == []
    status, headers, said = await refused(gw, "aider", "other-model")
    assert (status, "retry-after" in headers) == (400, False)
    assert "no price is known for other-model" in said


async def test_a_pause_is_refused_with_no_promise_of_midnight(
    start_gateway: StartGateway,
) -> None:
    """A ceiling of zero is a pause, which a new day does not end."""
    gw = await start_gateway()
    await gw.services.gate.ceilings.set("claude", Decimal(0))
    status, headers, said = await refused(gw, "claude", "scripted-model")
    assert status == 429
    assert headers["retry-after"] == "3600", "a new day does not end a pause"
    assert "paused" in said and "00:00" not in said
    assert gw.llm.requests == []
