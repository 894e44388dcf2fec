"""The scout, let go by a plane over its share, is asked there by another
agent: on a real PostgreSQL, two real planes. A ran `scout` and `writer`
and let the scout go; B takes it at its next renewal. The scout's call,
made on the asker's behalf, carried no fence of the scout's own, and a
lease let go read as no lease at all: A wrote the call as its own while
no plane held the scout, B's take swept it (counted at its estimate, a call
never sent), and the asker's turn ended on money the ledger would not
record. Leases here last two minutes, so no renewal runs but the test's."""

from __future__ import annotations

import asyncio
import contextvars
from pathlib import Path

import psycopg
import pytest

from plane.daemon.fleet import Tick
from plane.wire.protocol import Usage
from tests.support.takeovers import a_running_all, turns_end, until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

SCOUT, ASKER = "scout", "writer"
FREE = Usage()


async def test_the_scout_let_go_is_not_asked_on_the_plane_that_let_it_go(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
):
    """The order, driven by a lock the test holds: A lets the scout go; its
    asker asks it there; the moment a call of the scout's is written on A
    (before A looks whether it still runs the scout), the test locks the
    asker's lease, which A's next write for that turn waits on, and B takes
    the scout. Nothing of the scout's may be written on A, B sweeps nothing,
    and the asker is told why the scout does not answer, as a call refused
    for a lost lease says it."""
    async with a_running_all(tmp_path, scripted_llm, monkeypatch, postgres_url, [SCOUT, ASKER]) as (
        a,
        b,
    ):
        a_fleet, b_fleet = a.runtime.fleet, b.runtime.fleet
        assert a_fleet is not None and b_fleet is not None
        on_a = a.bus.subscribe()
        a_tick = await a_fleet.tick()
        assert a_tick.mine == frozenset({ASKER}), "A let the idle scout go"
        taking: list[asyncio.Task[Tick]] = []
        with (
            psycopg.connect(postgres_url) as locker,
            psycopg.connect(postgres_url, autocommit=True) as looking,
        ):
            ownership = a.services.ownership
            owned = ownership.owns

            def owns(agent: str) -> bool:
                """As A finds it; a call of the scout's written on A, B takes the scout."""
                pending = "SELECT 1 FROM calls WHERE agent = %s AND status = 'pending'"
                if agent == SCOUT and not taking and looking.execute(pending, (SCOUT,)).fetchone():
                    locker.execute("SELECT 1 FROM leases WHERE agent = %s FOR UPDATE", (ASKER,))
                    # B's tick in a context of its own, not the asker's turn's (its fence).
                    fresh = contextvars.Context()
                    taking.append(asyncio.create_task(b_fleet.tick(), context=fresh))
                return owned(agent)

            monkeypatch.setattr(ownership, "owns", owns)
            ask = {"question": "What is in notes.md?", "paths": []}
            scripted_llm.reply("", tool_calls=[("ask_scout", ask)], usage=FREE)
            scripted_llm.reply("done", usage=FREE)
            ending = asyncio.create_task(turns_end(on_a, [ASKER]))
            await a.send(ASKER, "ask the scout")
            await until(lambda: ending.done() or taking, "the asker's turn ended on A")
            if taking:
                b_tick = await taking[0]
                locker.commit()  # A's turn goes on
            else:
                b_tick = await b_fleet.tick()
            assert SCOUT in b_tick.gained, "B took the scout"
            assert SCOUT not in b_tick.cut, "a call of the scout's written on A, which let it go"
            await ending
        written = scouts_calls(postgres_url)
        assert written == [], "no call of the scout's written on a plane that does not hold it"
        told = str(scripted_llm.requests[-1]["messages"])
        assert "The scout is not answering: " in told, told
        lost = f"{a.services.ownership.plane}'s lease on {SCOUT} ran low, was let go or was taken"
        assert lost in told
        said = await a.services.conversation.history(SCOUT, 20)
        assert said == [], "nothing told to the scout where it does not run"


def scouts_calls(url: str) -> list[tuple[str, str]]:
    """Every call of the scout's in the ledger: its plane and its status."""
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT plane, status FROM calls WHERE agent = %s", (SCOUT,))
        return [(str(plane), str(status)) for plane, status in rows.fetchall()]
