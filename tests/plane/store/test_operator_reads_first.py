"""The operator's reads do not queue behind the agents' on PostgreSQL, as
on SQLite: they have a reader of their own. On one reader, a status or a
`/limit` waited behind every read the agents had queued: at 10,000 agents
on two planes, when thousands of rows were shown again after agents moved
between planes, `plane status` took 19 s and a `/limit` 28 s."""

import asyncio
import contextvars

import psycopg

from plane.store.engine import OPERATOR
from plane.store.postgres import PostgresDatabase

AGENTS_READS = 12
"""Reads queued by the agents, the first of them stuck on a lock the test holds."""

LOCK = 4242
"""The advisory lock the agents' first read waits for."""


async def test_an_operators_read_does_not_wait_for_the_agents_reads(postgres_url):
    db = await PostgresDatabase.connect(postgres_url)
    holder = await psycopg.AsyncConnection.connect(postgres_url, autocommit=True)
    try:
        await holder.execute("SELECT pg_advisory_lock(%s)", (LOCK,))
        agents = [
            asyncio.ensure_future(db.fetchall(f"SELECT pg_advisory_lock({LOCK})"))
            for _ in range(AGENTS_READS)
        ]
        await asyncio.sleep(0)  # queued, the first on the lock
        operators = contextvars.copy_context()
        operators.run(OPERATOR.set, True)
        read = operators.run(asyncio.ensure_future, db.fetchall("SELECT 42"))
        # Behind the agents' reads, it would wait for the lock: a deadline, then said.
        done, _ = await asyncio.wait({read}, timeout=10)
        answered_before = sum(task.done() for task in agents)
        await holder.execute("SELECT pg_advisory_unlock(%s)", (LOCK,))
        await asyncio.gather(*agents, read)
    finally:
        await holder.close()
        await db.close()
    assert done, "the operator's read waited behind the agents' reads"
    assert read.result()[0][0] == 42
    assert answered_before == 0, f"the operator's read waited for {answered_before} of theirs"
