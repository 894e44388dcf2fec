"""A plane's loop guard history is written at the end of the transaction
that carries its ledger's writes, under the agent's lease (its row locked
to the commit, plane/agents/guard_book.py). When that lease row is locked
by another transaction (another plane taking the agent or renewing a lease
it took: a plane that stalled and resumed finds it so), the write does not
wait on it, nor is it an error: a history whose lease another plane took
went with the lease (one plain line in plane.log); one whose lease is still
this plane's is written at the next commit."""

from __future__ import annotations

import logging
import time

import psycopg
import pytest

from plane.agents.guard import Guard
from plane.config import GuardConfig
from tests.attack.test_planes_guard import step
from tests.support.fleet_members import Member, join

pytestmark = pytest.mark.timeout(60)

RENEWING = "UPDATE leases SET expires_ms = expires_ms WHERE agent = 'demo'"
"""What a tick renewing the agent's lease holds until it commits."""
TAKING = "UPDATE leases SET plane = 'B', epoch = epoch + 1 WHERE agent = 'demo'"
"""What another plane's tick taking it holds until it commits."""


def kept_by(member: Member) -> Guard:
    """A guard of `demo` on `member`, keeping its history under its lease."""
    keep = lambda kept: member.guards.keep("demo", kept, member.ownership.fence("demo"))  # noqa: E731
    return Guard(GuardConfig(), keep)


def history(url: str) -> str | None:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT history FROM guard_history WHERE agent = 'demo'").fetchone()
        return None if row is None else str(row[0])


async def committed_while(member: Member, url: str, held: str) -> float:
    """A line of `member`'s committed (the guard's history at its end)
    while another transaction holds demo's lease row by `held`, which then
    commits; how long the line took."""
    with psycopg.connect(url) as holder:
        holder.execute(held)
        began = time.monotonic()
        said = await member.conversation.append("demo", "plane", "a line of the ledger's")
        took = time.monotonic() - began
        holder.commit()
    assert said.id > 0
    return took


async def test_a_locked_lease_row_holds_no_transaction_and_is_no_error(
    postgres_url, caplog: pytest.LogCaptureFixture
):
    a = await join(postgres_url, "A", ["demo"])
    caplog.set_level(logging.INFO, logger="plane.agents.guard_book")
    try:
        await a.fleet.tick(first=True)
        on_a = kept_by(a)
        for n in range(2):
            assert step(on_a, n) is None

        # The lease A's, its row locked by a renewal in flight: kept for the next commit.
        took = await committed_while(a, postgres_url, RENEWING)
        assert history(postgres_url) is None
        await a.db.write(lambda conn: None)
        written = history(postgres_url)
        assert written is not None, "written at the next commit"

        # A pauses with a newer history not yet written, and commits as B takes the agent.
        assert step(on_a, 2) is None
        took = max(took, await committed_while(a, postgres_url, TAKING))
        print(f"the ledger's transaction took {took:.3f} s with the lease row locked")
        await a.db.write(lambda conn: None)
        assert history(postgres_url) == written, "A's history under the lost lease is not written"
    finally:
        await a.db.close()
    said = [(r.levelname, r.getMessage()) for r in caplog.records if r.name.startswith("plane")]
    assert [line for line in said if line[0] == "ERROR"] == []
    assert said == [("INFO", "demo's loop guard history went with its lease to another plane")]
