"""The operator's reads do not queue behind the agents' on PostgreSQL, as
on SQLite: they have a reader of their own. On one reader, a status or a
`/limit` waited behind every read the agents had queued: at 10,000 agents
on two planes, when thousands of rows were shown again after agents moved
between planes, `plane status` took 19 s and a `/limit` 28 s."""

import asyncio
import contextvars

from plane.store.engine import OPERATOR
from plane.store.postgres import PostgresDatabase

AGENTS_READS = 12
"""Reads of a quarter of a second each, queued by the agents: three seconds."""


async def test_an_operators_read_does_not_wait_for_the_agents_reads(postgres_url):
    db = await PostgresDatabase.connect(postgres_url)
    try:
        agents = [
            asyncio.ensure_future(db.fetchall("SELECT pg_sleep(0.25)")) for _ in range(AGENTS_READS)
        ]
        await asyncio.sleep(0)  # queued
        operators = contextvars.copy_context()
        operators.run(OPERATOR.set, True)
        read = operators.run(asyncio.ensure_future, db.fetchall("SELECT 42"))
        rows = await read
        answered_before = sum(task.done() for task in agents)
        await asyncio.gather(*agents)
    finally:
        await db.close()
    assert rows[0][0] == 42
    assert answered_before <= 2, f"the operator's read waited for {answered_before} of theirs"
