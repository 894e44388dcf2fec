"""A message sent through a plane that does not run its agent wakes the
plane that does at once (the notice the store carries), not at that
plane's next renewal: on a real PostgreSQL, two real planes, A running
every agent and B none, the operator writing through B. Leases here last
two minutes, so no renewal runs meanwhile: before, the agent slept with
the message waiting until one did (a third of a lease, five seconds by
default)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.takeovers import a_running_all, turns_end

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

AGENTS = [f"agent-{n}" for n in range(4)]
SENT = AGENTS[1]


async def test_a_message_sent_through_another_plane_wakes_the_agents_plane_at_once(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
):
    async with a_running_all(tmp_path, scripted_llm, monkeypatch, postgres_url, AGENTS) as (a, b):
        on_a = a.bus.subscribe()
        await b.send(SENT, "are you there?")
        assert await turns_end(on_a, [SENT]) == [SENT], "A answers it"
        await a.quiet()
        assert await a.services.conversation.waiting_counts() == {}
        said = await b.services.conversation.history(SENT, 20)
        assert [m.text for m in said if m.kind == "agent"] == ["ok"], "answered once"
