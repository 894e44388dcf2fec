"""A gateway agent's loop counted across a fleet: two planes in this process
on one real PostgreSQL, each with its gateway on a real port. A gateway
agent has no lease, and its client calls whichever plane it reached (behind
a load balancer, say): a count of each plane's own calls let a client
looping through three planes spend three times the repeats before a hold.

aider's client sends the same request through A and B in turn: the fifth,
whichever plane it reached, is the one that finds the loop, as through one
plane; its next call is refused on both. An honest session whose calls go
through A and B in turn is never held. A count another plane holds (stalled
in its transaction) is never waited for."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from plane.agents.guard import Step
from plane.config import GuardConfig
from plane.store.postgres_links import BOUND_S
from tests.support.fixtures_plane import RunningPlane
from tests.support.fleet_members import NOON, join
from tests.support.gateway_planes import HELD, call, refused_on, two_running, until_held
from tests.support.gateway_sessions import HONEST_READS, chat_with_reads
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture
async def planes(
    tmp_path: Path, scripted_llm: ScriptedLLM, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[RunningPlane, RunningPlane, str]]:
    """Planes A and B, and aider's key, which both read."""
    async with two_running(tmp_path, scripted_llm, postgres_url, monkeypatch, 60.0) as planes:
        yield planes


async def held_for_loop(plane: RunningPlane) -> bool:
    """Whether `plane`'s row of aider says the loop guard holds it."""
    state = await plane.rows.state("aider")
    return state.status == "held" and state.hold_reason == "loop"


async def test_the_same_request_through_two_planes_in_turn_is_held_at_the_fifth(
    planes: tuple[RunningPlane, RunningPlane, str], scripted_llm: ScriptedLLM
) -> None:
    a, b, key = planes
    for n, plane in enumerate([a, b, a, b], start=1):
        assert (await call(plane, key)).status_code == 200, f"call {n}"
    assert not await held_for_loop(a) and not await held_for_loop(b), "held before the fifth"

    assert (await call(a, key)).status_code == 200, "the fifth is served, then found a loop"
    assert await held_for_loop(a), "the fifth identical call, two of them through B, not held"

    on_a = await refused_on(a, key, scripted_llm)
    assert HELD in on_a.text, on_a.text
    await until_held(b, True)
    on_b = await refused_on(b, key, scripted_llm)
    assert on_b.json() == on_a.json(), "the same refusal on both planes"


async def test_an_honest_session_through_two_planes_in_turn_is_never_held(
    planes: tuple[RunningPlane, RunningPlane, str],
) -> None:
    """Forty calls, each through the other plane: reads of twenty files
    (some twice, unchanged), then a test-fix cycle."""
    a, b, key = planes
    for n in range(1, len(HONEST_READS) + 1):
        body = {"model": "scripted-model", "messages": chat_with_reads(HONEST_READS[:n])}
        answer = await call((a, b)[n % 2], key, body)
        assert answer.status_code == 200, f"call {n}: {answer.text}"
    assert not await held_for_loop(a) and not await held_for_loop(b)


async def test_a_count_held_by_a_stalled_plane_is_never_waited_for(postgres_url):
    """Another plane stalled while its transaction holds aider's count (a
    paused process): this plane's step is not waited for — it carries the
    plane's ledger in the same transaction — and is left uncounted, as a
    call at the same time as another is; the writer goes on at once.
    Before, the writer waited out the server's lock timeout, three times."""
    member = await join(postgres_url, "p0", [], shared=True)
    step = Step(cost=Decimal("0.01"), at=NOON, request=b"same")
    try:
        assert await member.guards.step_shared("aider", GuardConfig(), step) is None
        with psycopg.connect(postgres_url, autocommit=False) as stalled:
            stalled.execute("SELECT 1 FROM guard_history WHERE agent = 'aider' FOR UPDATE")
            async with asyncio.timeout(BOUND_S):
                assert await member.guards.step_shared("aider", GuardConfig(), step) is None
                await member.db.write(lambda conn: conn.execute("SELECT 1"))
    finally:
        await member.db.close()
