"""A renewal wakes only the agents with something to do, read for the
fleet at once; when that read fails, it wakes every agent it holds, each
to look for itself, so none is left asleep with work. On a real
PostgreSQL, two real planes, four agents: A stops, one agent is sent a
message while no plane runs it, and B takes them all at a renewal whose
read of which agents have work fails (the table of the holds told is gone
from the store for that read: it is back before any agent looks). Every
agent is woken, and the one with a message answers it."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from tests.support.takeovers import a_running_all, take_over, turns_end

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

AGENTS = [f"agent-{n}" for n in range(4)]
SENT = AGENTS[2]


async def test_a_takeover_whose_read_of_the_work_fails_wakes_every_agent_it_takes(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
):
    async with a_running_all(tmp_path, scripted_llm, monkeypatch, postgres_url, AGENTS) as (a, b):
        await a.stop()  # its leases let go: no plane runs the agents
        await b.send(SENT, "are you there?")
        with psycopg.connect(postgres_url, autocommit=True) as store:
            store.execute("ALTER TABLE holds_told RENAME TO holds_told_away")

            def whole_again() -> None:  # the read failed: the store is whole again before any look
                store.execute("ALTER TABLE holds_told_away RENAME TO holds_told")

            woken, subscription = await take_over(b, AGENTS, whole_again)
        assert sorted(woken) == AGENTS, "every agent taken looks for itself"
        assert await turns_end(subscription, [SENT]) == [SENT]
        await b.quiet()
        assert await b.services.conversation.waiting_counts() == {}, "its message answered"
