"""A ceiling of $0.00 set on another plane a moment before, on a real
PostgreSQL: the gateway's plane still remembers the ceiling it read, or
none where its file has none (the other plane's notice not yet heard), so
its gate and its weighing let the call through, and the ledger's
admission, which reads the ceiling set under its lock, refuses it. The
refusal is the pause's, as the gate's would be: no Retry-After to 00:00
UTC, `agent_paused` where the API has codes, the sentence that says what
lifts it. Nothing is sent or written.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from decimal import Decimal

import pytest

from plane.clock import ManualClock
from plane.daemon import fleet
from plane.money.ceilings import Ceilings
from plane.store.postgres import PostgresDatabase
from tests.support.fixtures_gateway import CONFIG, NOON, GatewayPlane, StartGateway
from tests.support.local_http import local_client

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]

SHARED = CONFIG + (
    "fleet:\n  limitUsd: 5\ngroups:\n  crew:\n    limitUsd: 5\n    agents: [claude, aider]\n"
)
"""The fleet's ceiling and the group crew's, $5 each in the file."""

FIRST_SET = CONFIG + "groups:\n  crew:\n    agents: [claude, aider]\n"
"""No fleet ceiling and none for the group crew in the file: the one the
operator sets on the other plane is the first, and the gateway's plane
remembers none."""

REMEMBERED = {SHARED: (5, 5), FIRST_SET: (None, None)}
"""What the gateway's plane remembers of the fleet's and crew's ceilings."""

PAUSES: dict[str, tuple[Callable[[Ceilings], Awaitable[None]], str]] = {
    "/limit fleet 0": (
        lambda c: c.set_fleet(Decimal(0)),
        "is paused: the fleet's daily ceiling is $0.00",
    ),
    "/limit group crew 0": (
        lambda c: c.set_group("crew", Decimal(0)),
        "is paused: its group crew's daily ceiling is $0.00",
    ),
}
"""The operator's pause typed on the other plane, and what the refusal says."""

ASKED = {
    "/v1/chat/completions": {
        "model": "scripted-model",
        "messages": [{"role": "user", "content": "hello"}],
        "max_tokens": 10,
    },
    "/v1/responses": {"model": "scripted-model", "input": "hello", "max_output_tokens": 10},
}


@pytest.fixture
async def other_plane(postgres_url: str) -> AsyncIterator[Ceilings]:
    """The ceilings of another plane on the store, where the operator types:
    what it sets is stored, and no notice of it reaches the gateway's plane
    (as one still on its way)."""
    db = await PostgresDatabase.connect(postgres_url)
    ceilings = Ceilings(db, ManualClock(NOON))
    await ceilings.load({})
    yield ceilings
    await db.close()


@pytest.fixture(params=[SHARED, FIRST_SET], ids=["remembered", "first set"])
def config(request: pytest.FixtureRequest) -> str:
    """The gateway's plane's agents.yaml."""
    return str(request.param)


@pytest.fixture
async def gateway_plane(
    config: str, start_gateway: StartGateway, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> GatewayPlane:
    """The gateway's plane on the same store, its renewals a minute apart:
    none reads the ceilings again while the test runs."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", 60.0)
    return await start_gateway(config)


@pytest.mark.parametrize("typed", list(PAUSES))
async def test_a_zero_ceiling_set_on_another_plane_is_refused_as_a_pause(
    gateway_plane: GatewayPlane, other_plane: Ceilings, typed: str, config: str
) -> None:
    gw = gateway_plane
    pause, sentence = PAUSES[typed]
    await pause(other_plane)
    remembered = gw.services.gate.ceilings
    heard = (remembered.fleet(), remembered.groups.ceiling("crew"))
    assert heard == REMEMBERED[config], "not heard yet"

    path, heads = gw.calls_as("claude")  # Anthropic Messages: no codes, a Retry-After
    async with local_client(base_url=gw.url, timeout=10) as http:
        answer = await http.post(path, json=ASKED["/v1/chat/completions"], headers=heads)
        said = answer.json()["error"]["message"]
        assert (answer.status_code, answer.headers["retry-after"]) == (429, "3600"), said
        assert said.startswith(f"claude {sentence}") and "00:00" not in said

        heads = {"authorization": f"Bearer {gw.keys['aider']}"}
        for path, body in ASKED.items():
            answer = await http.post(path, json=body, headers=heads)
            error = answer.json()["error"]
            assert (answer.status_code, error["code"]) == (400, "agent_paused"), path
            said = error["message"]
            assert said.startswith(f"aider {sentence}") and "00:00" not in said
    assert gw.llm.requests == [] and await gw.entries() == [], "nothing sent, nothing written"
