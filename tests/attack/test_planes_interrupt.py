"""The operator's interrupt through any plane of a fleet sharing one
PostgreSQL: a TUI attached to plane B cuts the turn plane A runs, as it
would on A. The reply comes once the conversation says what the cut-off
turn cost; with no turn running there, the one clear error a single plane
gives. (Before, B looked only at its own workers and said there was nothing
to interrupt while A's turn went on.)"""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from plane.daemon import fleet
from plane.wire import protocol as p
from plane.wire.client import RequestFailed
from tests.support.fixtures_plane import RunningPlane, launch, scripted_config
from tests.support.fleet_members import a_and_b, runs
from tests.support.looping import CENT
from tests.support.scripted_llm import Reply
from tests.support.tcp_proxy import TcpProxy, through

LEASE_S = 3.0
CUT = "Interrupted by the operator. The cut-off turn cost $"


def answers_ok(body: dict, serial: int) -> Reply:
    return Reply("ok", usage=CENT)


async def interrupt(plane: RunningPlane) -> str:
    """The operator interrupts demo through `plane`: "ok", or the error said."""
    client = await plane.client()
    try:
        await client.request(p.Interrupt(agent="demo"))
    except RequestFailed as refused:
        return str(refused)
    return "ok"


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_a_turn_one_plane_runs_is_interrupted_through_another(
    tmp_path: Path, scripted_llm, postgres_url, monkeypatch
):
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    scripted_llm.responder = answers_ok
    config = scripted_config("  demo: {}\n", limit_usd="5")
    async with a_and_b(tmp_path, scripted_llm, config, 10 * LEASE_S) as (a, b):
        idle = await interrupt(b)
        assert idle == "demo is not taking a turn: there is nothing to interrupt."

        on_a = await a.mid_answer("demo", "write a long story")
        assert await interrupt(b) == "ok"
        # Replied once the conversation says what the turn cost, on A and in the store.
        said = [m.text for m in await b.services.conversation.history("demo", 10)]
        assert any(t.startswith(CUT) for t in said), said
        await a.until_turn_ends("demo", on_a, 10 * LEASE_S)
        [cut] = [
            c for c in await a.services.ledger.entries(a.services.clock.now().date())
            if c.status == "interrupted"
        ]  # fmt: skip
        assert cut.estimated


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_an_interrupt_the_owner_never_hears_says_so_and_cuts_nothing(
    tmp_path: Path, scripted_llm, postgres_url, monkeypatch
):
    """A's link to the store stops forwarding mid-turn (a partition): B's
    interrupt reaches no one, and B says so within a lease instead of
    waiting for ever or claiming the turn was cut. (A's lease runs out
    meanwhile, and its call in flight is counted as any stalled plane's.)"""
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    scripted_llm.responder = answers_ok
    config = scripted_config("  demo: {}\n", limit_usd="5")
    with TcpProxy(urlsplit(postgres_url).port or 5432) as proxy:
        monkeypatch.setenv("PLANE_STORE", through(postgres_url, proxy.port))
        a = await launch(tmp_path / "a", scripted_llm, config)
        try:
            await asyncio.wait_for(runs(a, "demo"), 10 * LEASE_S)
            monkeypatch.setenv("PLANE_STORE", postgres_url)
            b = await launch(tmp_path / "b", scripted_llm, config)
            try:
                await a.mid_answer("demo", "write a long story")
                proxy.stall()
                said = await interrupt(b)
                assert said == (
                    f"demo runs on plane {a.services.ownership.plane}, which did not answer: "
                    "its turn was not interrupted. Try again in a moment."
                ), said
                texts = [m.text for m in await b.services.conversation.history("demo", 20)]
                assert not [t for t in texts if t.startswith(CUT)], texts
            finally:
                proxy.resume()
                scripted_llm.hang_up()
                await b.stop()
        finally:
            await a.stop()
