"""A plane starting is told of a message for an agent it just took before
that agent's worker is made, and answers it then: on a real PostgreSQL,
two real planes. The plane listens before it reads what waits; a message
stored after that read is told only by its notice, which came while the
worker did not exist yet and was dropped: the message waited for the
plane's next renewal (here, with leases of two minutes, none comes)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psycopg
import pytest

from plane.agents.workers import Workers
from plane.daemon import fleet
from tests.support.fixtures_plane import launch, scripted_config
from tests.support.fleet_members import runs
from tests.support.takeovers import DEADLINE_S, LEASE_S, until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

AGENT = "agent-0"

STARTING_READ = (
    "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%holds_told%'"
)
"""The starting plane's read of the holds told, the one after what waits,
waiting on the test's lock."""


async def test_a_message_told_before_its_agents_worker_is_made_is_answered(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
):
    """A ran the agent and stopped; B runs beside it, holding nothing. A
    starts again and takes the agent; it has read what waits (nothing)
    when the test's lock on the holds told stops its start before the
    workers are made. A message sent through B then is told to A, heard
    there, and A's start goes on: A answers it."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    heard: list[str] = []
    told = Workers.told

    def telling(workers: Workers, agent: str) -> None:
        heard.append(agent)
        told(workers, agent)

    monkeypatch.setattr(Workers, "told", telling)
    config = scripted_config(f"  {AGENT}: {{}}\n")
    a = await launch(tmp_path / "a", scripted_llm, config)
    await asyncio.wait_for(runs(a, AGENT), DEADLINE_S)
    b = await launch(tmp_path / "b", scripted_llm, config)
    again = None
    try:
        await a.stop()  # its lease let go
        with (
            psycopg.connect(postgres_url) as locker,
            psycopg.connect(postgres_url, autocommit=True) as looking,
        ):
            locker.execute("LOCK TABLE holds_told IN ACCESS EXCLUSIVE MODE")
            starting = asyncio.create_task(launch(tmp_path / "a", scripted_llm, config))

            def stopped() -> bool:
                return looking.execute(STARTING_READ).fetchone() is not None

            await until(lambda: starting.done() or stopped(), "A's start read what waits")
            assert not starting.done(), "A started without reading the holds told"
            sending = asyncio.create_task(b.send(AGENT, "are you there?"))
            await until(lambda: AGENT in heard, "A heard of the message")
            locker.commit()  # A's start goes on: its workers are made
            again = await starting
            await sending
        assert AGENT in (again.services.ownership.mine or ()), "A took the agent at its start"
        waiting = again.services.conversation.waiting_counts
        try:
            async with asyncio.timeout(DEADLINE_S):
                while await waiting():  # noqa: ASYNC110 - A's worker moves it
                    await asyncio.sleep(0.02)
        except TimeoutError:
            pytest.fail(f"the message told before {AGENT}'s worker was made still waits")
        await again.quiet()
        said = await again.services.conversation.history(AGENT, 20)
        assert [m.text for m in said if m.kind == "agent"] == ["ok"], "answered once"
    finally:
        scripted_llm.hang_up()
        if again is not None:
            await again.stop()
        await b.stop()
