"""The store's tests share a database a worker (tests/support/postgres.py):
what one test leaves there, the next must not find. Emptied, a database that
held tables, a schema of its own, a function and a trigger, and a session
holding a lock in an open transaction, is as CREATE DATABASE makes it, and a
plane's store migrates in it; between two tests it is put back as a new
plane's store (tests/support/postgres_fresh.py), whatever the last test left."""

from __future__ import annotations

import psycopg

from plane.store.migrations import MIGRATIONS
from plane.store.postgres import PostgresDatabase
from tests.support.postgres_fresh import emptied, fresh_store


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


def _oid(url: str, table: str) -> int:
    with psycopg.connect(url) as conn:
        [(oid,)] = conn.execute("SELECT %s::regclass::oid", (table,)).fetchall()
        return int(oid)


async def test_a_test_that_left_rows_is_followed_by_a_new_planes_store(postgres_url: str) -> None:
    """Rows, a schema's version and a sequence moved: put back without
    making the schema again (its tables are the same ones)."""
    made = _oid(postgres_url, "messages")
    db = await PostgresDatabase.connect(postgres_url)
    try:
        for _ in range(2):
            await db.write(
                lambda conn: conn.execute(
                    "INSERT INTO messages (agent, at, kind, text) VALUES ('a', 'now', 'plane', 'x')"
                )
            )
        await db.write(lambda conn: conn.execute("UPDATE plane_schema SET version = 99"))
    finally:
        await db.close()

    fresh_store(postgres_url)

    assert _oid(postgres_url, "messages") == made, "the schema was not made again"
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM messages").fetchone() == (0,)
        assert conn.execute("SELECT version FROM plane_schema").fetchall() == [(len(MIGRATIONS),)]
        inserted = conn.execute(
            "INSERT INTO messages (agent, at, kind, text) VALUES ('a', 'now', 'plane', 'c')"
            " RETURNING id"
        ).fetchone()
        assert inserted == (1,), "the sequence starts again"


async def test_a_test_that_changed_the_schema_is_followed_by_it_made_again(
    postgres_url: str,
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql"
            " AS $$ BEGIN RAISE EXCEPTION 'no'; END $$"
        )
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION refuse()"
        )
        conn.execute("ALTER TABLE calls ADD COLUMN mine TEXT")
    made = _oid(postgres_url, "messages")

    fresh_store(postgres_url)

    assert _oid(postgres_url, "messages") != made, "made again"
    with psycopg.connect(postgres_url) as conn:
        conn.execute(
            "INSERT INTO messages (agent, at, kind, text) VALUES ('a', 'now', 'plane', 'x')"
        )
        columns = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'calls'"
        ).fetchall()
        assert ("mine",) not in columns
