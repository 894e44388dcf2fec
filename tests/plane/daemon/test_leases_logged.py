"""The log's line for the leases a plane takes names the first agents and
counts the rest: at 10,000 agents it was one line of 120,000 characters,
in plane.log and on the terminal of `plane serve`, at every takeover."""

import logging

from tests.support.fleet_members import join

AGENTS = [f"agent-{n:03d}" for n in range(30)]


async def test_a_plane_taking_many_agents_says_so_in_one_short_line(postgres_url, caplog):
    plane = await join(postgres_url, "p1", AGENTS)
    try:
        with caplog.at_level(logging.INFO, logger="plane.daemon.fleet"):
            await plane.fleet.tick(first=True)
    finally:
        await plane.db.close()
    took = [r.getMessage() for r in caplog.records if " took " in r.getMessage()]
    assert took == ["p1 took " + ", ".join(AGENTS[:20]) + ", and 10 more"], took
