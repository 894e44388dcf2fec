"""Attack: on a real PostgreSQL, another plane's call in flight, counted at
the most it may cost, fills the fleet's $0.05 ceiling while nothing was
spent. A gateway call through this plane, which no book of its gateway
weighs against it (only the ledger's admission sees the fleet), was told a
hold until 00:00 UTC ("the fleet's calls today come to $0.05 with those in
flight"), and so was its agent's conversation. Now it waits, no plane
telling this one when that call settles (it asks again by itself), and goes
once it settles cheaper; or, past its wait, gets a 429 with a short
Retry-After and the sentence of the calls in flight, its agent told nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from plane.clock import ManualClock
from plane.money.ledger import Ledger
from plane.store.postgres import PostgresDatabase
from plane.wire.protocol import Usage
from tests.support.fixtures_gateway import CONFIG as GATEWAY
from tests.support.fixtures_plane import RunningPlane
from tests.support.gateway_planes import ASKED, call, one_running
from tests.support.scripted_llm import Reply, ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
LEASE_S = 3.0
FLEET = Decimal("0.05")


@pytest.fixture
async def planes(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url
) -> AsyncIterator[tuple[RunningPlane, str, Ledger]]:
    """This plane of the fleet under a $0.05 fleet ceiling, its gateway
    listening, aider's key, and the ledger of another plane on the same store."""
    async with one_running(
        tmp_path, scripted_llm, postgres_url, monkeypatch, LEASE_S, GATEWAY, ManualClock(NOON)
    ) as (running, key):
        await running.services.gate.ceilings.set_fleet(FLEET)
        other = await PostgresDatabase.connect(postgres_url, migrate=False)
        try:
            yield running, key, Ledger(other, ManualClock(NOON))
        finally:
            await other.close()


async def told_nothing(plane: RunningPlane) -> None:
    """aider's conversation was told no hold, nor its row shown held."""
    said = await plane.services.conversation.history("aider")
    assert [m.text for m in said if m.kind == "plane"] == []
    assert await plane.services.conversation.told_hold("aider") is None
    assert (await plane.rows.state("aider")).status != "held"


async def test_a_gateway_call_waits_for_another_planes_call_and_goes_once_it_settles(
    planes, scripted_llm: ScriptedLLM
) -> None:
    plane, key, elsewhere = planes
    flying = await elsewhere.open_call(
        "claude", "scripted", "scripted-model", FLEET, "estimate", fleet_ceiling=FLEET
    )
    scripted_llm.default_reply = Reply("ok", Usage(input_tokens=5))
    answer = asyncio.create_task(call(plane, key, ASKED))
    await asyncio.sleep(0.5)
    assert not answer.done() and scripted_llm.requests == [], "refused, or sent beside it"
    await elsewhere.settle(flying, Usage(input_tokens=5), Decimal("0.005"), "t")
    assert (await answer).status_code == 200
    await told_nothing(plane)


async def test_past_its_wait_it_is_told_to_retry_in_seconds_not_held(
    planes, scripted_llm: ScriptedLLM
) -> None:
    plane, key, elsewhere = planes
    plane.gateway.admission.wait_s = 0.5
    await elsewhere.open_call(
        "claude", "scripted", "scripted-model", FLEET, "estimate", fleet_ceiling=FLEET
    )
    refused = await call(plane, key, ASKED)
    assert refused.status_code == 429, refused.text
    assert refused.headers["retry-after"] == "5"
    said = refused.json()["error"]["message"]
    assert said.startswith("the fleet's calls in flight (about $0.05) and this one (about $")
    assert said.endswith(
        "would take more than the $0.05 left of the fleet's $0.05 daily ceiling today; "
        "it waits for them to settle: retry in 5 seconds."
    )
    assert scripted_llm.requests == []
    await told_nothing(plane)
