"""A worker's database put back, between two tests, as a new plane's store:
the plane's schema, and no row but those its migrations write.

Making that schema is most of what a PostgreSQL test costs the server: the
plane's migrations, some fifty statements of DDL, take ~95 ms of its CPU,
and dropping what a test made ~10 ms, against ~15 ms for what is done here
when the last test changed nothing but rows. So the schema is made once a
worker, and its shape (every relation, column, constraint, index, function,
trigger, schema and type outside PostgreSQL's own) and its rows are read
then. Before each test the database is compared with that shape: the same,
every table is emptied and the migrations' rows and the sequences are put
back; not the same (a test made a table, a trigger, a function...), it is
dropped and made again. `emptied` is the database as CREATE DATABASE makes
it (`bare_postgres_url`, for the tests of migrating itself)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

_OURS = "n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'"

SHAPE = f"""
SELECT 'relation', n.nspname || '.' || c.relname || ' ' || c.relkind::text
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE {_OURS}
UNION ALL SELECT 'column', c.relname || '.' || a.attname || ' '
    || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull::text
    || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
  WHERE {_OURS} AND a.attnum > 0 AND NOT a.attisdropped
UNION ALL SELECT 'constraint', c.conname || ' ' || pg_get_constraintdef(c.oid)
  FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE {_OURS}
UNION ALL SELECT 'index', pg_get_indexdef(i.indexrelid)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace WHERE {_OURS}
UNION ALL SELECT 'function', n.nspname || '.' || p.proname
    || '(' || pg_get_function_identity_arguments(p.oid) || ') ' || md5(p.prosrc)
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE {_OURS}
UNION ALL SELECT 'trigger', t.tgrelid::regclass::text || ' ' || t.tgname || ' ' || t.tgenabled::text
  FROM pg_trigger t WHERE NOT t.tgisinternal
UNION ALL SELECT 'schema', n.nspname FROM pg_namespace n WHERE {_OURS}
UNION ALL SELECT 'type', n.nspname || '.' || t.typname
  FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
  WHERE {_OURS} AND t.typtype IN ('d', 'e', 'r', 'm')
UNION ALL SELECT 'setting', array_to_string(s.setconfig, ',') FROM pg_db_role_setting s
  WHERE s.setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
UNION ALL SELECT 'extension', extname FROM pg_extension
"""
"""What a test could change in a database but its rows, one line an object."""


@dataclass(frozen=True)
class Fresh:
    """A new plane's store, as read once a worker."""

    shape: frozenset[tuple[str, str]]
    rows: dict[str, list[tuple[Any, ...]]]
    """Every table's rows, by qualified name (the migrations' own: a few)."""
    sequences: dict[str, tuple[int, bool]]
    """Every sequence's `last_value` and `is_called`, by qualified name."""


ENDED = (
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
)
"""Every session of the last test's ended (one may hold a lock)."""

EMPTIED = (
    ENDED,
    "DROP SCHEMA IF EXISTS public CASCADE",
    "CREATE SCHEMA public AUTHORIZATION pg_database_owner",
    "GRANT USAGE ON SCHEMA public TO PUBLIC",
)
"""A database as CREATE DATABASE makes it: every session of the last test's
ended, everything it made gone with the schema it made it in (tables,
sequences, functions, triggers), the schema as new (PostgreSQL 15's)."""


def _schemas(conn: Any) -> list[str]:
    found = conn.execute(
        "SELECT nspname FROM pg_namespace"
        " WHERE nspname NOT LIKE 'pg\\_%' AND nspname NOT IN ('information_schema', 'public')"
    )
    return [row[0] for row in found]


_fresh: dict[str, Fresh] = {}
"""By database URL: the one this worker uses."""


def fresh_store(url: str) -> None:
    """The database at `url` as a new plane's store."""
    import psycopg

    known = _fresh.get(url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(ENDED)
        if known is not None and _shape(conn) == known.shape:
            _put_back(conn, known)
            return
    emptied(url)
    _migrated(url)
    with psycopg.connect(url, autocommit=True) as conn:
        made = _read(conn)
    if known is not None:
        assert made.shape == known.shape, "the plane's schema came out differently"
    _fresh[url] = made


def emptied(url: str) -> None:
    """The database at `url` as CREATE DATABASE makes it (`EMPTIED`)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for schema in _schemas(conn):
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        for statement in EMPTIED:
            conn.execute(statement)


def _shape(conn: Any) -> frozenset[tuple[str, str]]:
    return frozenset(conn.execute(SHAPE).fetchall())


def _read(conn: Any) -> Fresh:
    from psycopg import sql

    tables = [
        name
        for (name,) in conn.execute(
            "SELECT n.nspname || '.' || c.relname FROM pg_class c"
            f" JOIN pg_namespace n ON n.oid = c.relnamespace WHERE {_OURS}"
            " AND c.relkind IN ('r', 'p') ORDER BY 1"
        )
    ]
    sequences = [
        name
        for (name,) in conn.execute(
            "SELECT n.nspname || '.' || c.relname FROM pg_class c"
            f" JOIN pg_namespace n ON n.oid = c.relnamespace WHERE {_OURS} AND c.relkind = 'S'"
        )
    ]
    rows = {
        table: conn.execute(sql.SQL("SELECT * FROM {}").format(_name(table))).fetchall()
        for table in tables
    }
    counters: dict[str, tuple[int, bool]] = {}
    for name in sequences:
        query = sql.SQL("SELECT last_value, is_called FROM {}").format(_name(name))
        value, called = conn.execute(query).fetchone()
        counters[name] = (int(value), bool(called))
    return Fresh(_shape(conn), rows, counters)


def _put_back(conn: Any, fresh: Fresh) -> None:
    """Every table emptied and the migrations' rows written again, in one
    transaction (foreign keys not checked meanwhile), then the sequences."""
    from psycopg import sql

    with conn.transaction():
        conn.execute("SET LOCAL session_replication_role = replica")
        for table, rows in fresh.rows.items():
            conn.execute(sql.SQL("DELETE FROM {}").format(_name(table)))
            if rows:
                marks = sql.SQL(", ").join(sql.Placeholder() * len(rows[0]))
                insert = sql.SQL("INSERT INTO {} VALUES ({})").format(_name(table), marks)
                conn.cursor().executemany(insert, rows)
    for name, (value, called) in fresh.sequences.items():
        conn.execute("SELECT setval(%s, %s, %s)", (name, value, called))


def _name(qualified: str) -> Any:
    from psycopg import sql

    schema, _, table = qualified.partition(".")
    return sql.Identifier(schema, table)


def _migrated(url: str) -> None:
    """The plane's schema made at `url` as a plane's first start makes it (on
    a thread of its own: a fixture may run inside the test's event loop)."""
    from plane.store.postgres import PostgresDatabase

    async def migrate() -> None:
        db = await PostgresDatabase.connect(url)
        await db.close()

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, migrate()).result()
