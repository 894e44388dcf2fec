"""The store's tests share a database a worker (tests/support/postgres.py):
what one test leaves there, the next must not find. A test that left tables,
a schema of its own, a function and a trigger, and a session holding a lock
in an open transaction, is followed by a database as CREATE DATABASE makes
it, in which a plane's store migrates."""

from __future__ import annotations

import psycopg

from plane.store.postgres import PostgresDatabase
from tests.support.postgres import emptied


def _made(conn: psycopg.Connection) -> list[tuple[str, str]]:
    found = conn.execute(
        "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'"
        " UNION SELECT n.nspname, p.proname FROM pg_proc p JOIN pg_namespace n"
        " ON n.oid = p.pronamespace WHERE n.nspname = 'public'"
        " UNION SELECT nspname, '' FROM pg_namespace"
        " WHERE nspname NOT LIKE 'pg\\_%' AND nspname NOT IN ('information_schema', 'public')"
    )
    return sorted(found)


async def test_what_a_test_left_in_the_database_is_gone_for_the_next(postgres_url: str) -> None:
    db = await PostgresDatabase.connect(postgres_url)
    await db.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA mine")
        conn.execute("CREATE TABLE mine.notes (id serial PRIMARY KEY)")
        conn.execute(
            "CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql"
            " AS $$ BEGIN RAISE EXCEPTION 'no'; END $$"
        )
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION refuse()"
        )
        assert _made(conn)
    holding = psycopg.connect(postgres_url)
    holding.execute("LOCK TABLE messages IN ACCESS EXCLUSIVE MODE")  # and never commits

    emptied(postgres_url)

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert _made(conn) == []
    assert holding.closed or holding.broken or _ended(holding)
    db = await PostgresDatabase.connect(postgres_url)
    try:
        assert await db.fetchall("SELECT COUNT(*) FROM messages") == [(0,)]
    finally:
        await db.close()


def _ended(conn: psycopg.Connection) -> bool:
    try:
        conn.execute("SELECT 1")
    except psycopg.OperationalError:
        return True
    finally:
        conn.close()
    return False
