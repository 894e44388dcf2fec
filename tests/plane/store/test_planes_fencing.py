"""Fencing on a real PostgreSQL, planes in one process (each its own
connections): a lease's epoch moves on every take, a write made under an
older one is refused in its own transaction, and admission checks the lease
after the wait for the fleet's row, not before it."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime
from decimal import Decimal
from types import SimpleNamespace
from typing import cast

import psycopg
import pytest

from plane.agents.metering import metered_call
from plane.agents.services import Services
from plane.config import Price
from plane.money.ledger import LeaseLost
from plane.money.pricing import Pricer
from plane.providers.base import ChatMessage, CompletionRequest
from plane.providers.openai import OpenAIProvider
from plane.store.fence import FENCE
from tests.support.fleet_members import Member, join
from tests.support.scripted_llm import ScriptedLLM

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
AGENTS = ["a", "b"]


@pytest.fixture
async def planes(postgres_url, monkeypatch):
    monkeypatch.setattr("plane.daemon.fleet.LEASE_S", 0.5)
    made: list[Member] = []

    async def make(name: str) -> Member:
        made.append(await join(postgres_url, name, AGENTS, shared=True))
        return made[-1]

    yield make
    for member in made:
        await member.db.close()


async def test_a_call_waiting_for_the_fleet_row_is_refused_if_its_lease_moved_meanwhile(
    planes, postgres_url
):
    first = await planes("p0")
    await first.fleet.tick(first=True)
    with psycopg.connect(postgres_url) as other:  # another plane's admission, holding the row
        other.execute("UPDATE fleet SET admitted = admitted + 1 WHERE id = 1")
        waiting = asyncio.ensure_future(
            first.ledger.open_call(
                "a", "p", "m", Decimal("0.01"), "estimate", fleet_ceiling=Decimal(10)
            )
        )
        await asyncio.sleep(0.7)  # p0's lease runs out while its call waits for the row
        second = await planes("p1")
        assert "a" in (await second.fleet.tick(first=True)).gained
        other.commit()
    with pytest.raises(LeaseLost, match="a is run by p1 now"):
        await waiting
    rows = await second.db.fetchall("SELECT agent, plane FROM calls")
    assert rows == [], "a call was opened for a by p0 while p1 held it"


async def test_a_write_under_an_older_epoch_is_refused_and_writes_nothing(planes):
    from plane.store.fence import FENCE

    first = await planes("p0")
    await first.fleet.tick(first=True)
    stale = first.ownership.fence("a")
    assert stale is not None
    await asyncio.sleep(0.6)
    second = await planes("p1")
    await second.fleet.tick(first=True)
    token = FENCE.set(stale)
    try:
        with pytest.raises(LeaseLost):
            await first.conversation.append("a", "plane", "The turn failed inside the plane")
        with pytest.raises(LeaseLost):
            await first.ledger.open_call("a", "p", "m", Decimal("0.01"), "estimate")
    finally:
        FENCE.reset(token)
    assert await second.conversation.history("a") == []
    fresh = second.ownership.fence("a")
    assert fresh is not None and fresh.epoch > stale.epoch


async def test_a_lease_of_its_own_that_ran_out_is_taken_anew_and_its_calls_swept(planes):
    """A plane paused (or its store away) past its lease, the agent taken by
    no one meanwhile: its next renewal takes the lease anew — a new epoch,
    so the turn it was in writes nothing more — and counts the call that
    turn left in flight at its estimate, once."""
    first = await planes("p0")
    await first.fleet.tick(first=True)
    before = first.ownership.fence("a")
    call = await first.ledger.open_call("a", "p", "m", Decimal("0.02"), "estimate")
    await asyncio.sleep(0.6)
    assert not first.ownership.owns("a"), "no call is started once a third of it is left"
    tick = await first.fleet.tick()
    assert "a" in tick.gained and tick.cut["a"].estimate_usd == Decimal("0.02")
    after = first.ownership.fence("a")
    assert before is not None and after is not None and after.epoch == before.epoch + 1
    [row] = await first.db.fetchall("SELECT status FROM calls WHERE id = ?", call)
    assert row[0] == "interrupted"
    assert first.ownership.owns("a")


@pytest.mark.slow  # it waits out most of a 3 s lease
async def test_a_call_cut_while_its_renewal_came_late_is_counted_by_its_own_plane(
    planes, monkeypatch, scripted_llm: ScriptedLLM
):
    """The store slow, not away: no renewal lands before a call's bound, so
    the call is cut, while the lease still holds by the database's clock.
    The next renewal keeps the lease (no plane takes the agent, so none
    would ever sweep the call): its own plane counts it at its estimate,
    once, and nothing is left pending. The renewal that came late is the
    bound set short by hand: the lease itself holds for a minute, however
    slow the machine."""
    monkeypatch.setattr("plane.daemon.fleet.LEASE_S", 60.0)
    first = await planes("p0")
    taken = await first.fleet.tick(first=True)
    now = time.monotonic()
    first.ownership.renewed(taken.mine, taken.epochs, now + 30, calls_until=now + 0.3)
    answer = threading.Event()
    scripted_llm.reply("too late", until=answer)
    provider = OpenAIProvider("scripted", base_url=scripted_llm.base_url, api_key="k")
    services = SimpleNamespace(
        providers={"scripted": provider},
        pricer=Pricer({"scripted-model": Price(input=Decimal(1), output=Decimal(100))}),
        ledger=first.ledger,
        emit=lambda event: None,
        gate=SimpleNamespace(
            ceilings=SimpleNamespace(
                fleet=lambda: None, groups=SimpleNamespace(budget=lambda a: None)
            )
        ),
        ownership=first.ownership,
    )
    request = CompletionRequest("scripted-model", "", (ChatMessage("user", "hello"),))
    token = FENCE.set(first.ownership.fence("a"))
    try:
        with pytest.raises(LeaseLost, match="p0's lease on a ran out during its call"):
            await metered_call(cast(Services, services), "a", "scripted", request, 1)
    finally:
        FENCE.reset(token)
        answer.set()
        await provider.aclose()
    [(status, cost)] = await first.db.fetchall("SELECT status, cost_usd FROM calls")
    assert status == "interrupted", "the cut call was left pending"
    assert Decimal(cost) > 0
    tick = await first.fleet.tick()
    assert "a" in tick.mine and not tick.gained, "the lease was kept: no plane takes the agent"
    assert not tick.cut, "the call was counted twice"
    assert await first.ledger.spend_today("a") == Decimal(cost)
