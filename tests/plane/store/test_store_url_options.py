"""The store's URL is the user's: what it sets for the server's sessions
(`options`, e.g. the schema the plane's tables live in) is kept beside the
plane's own bounds, never dropped for them; and those bounds hold on every
connection, whatever the URL asks."""

from __future__ import annotations

from urllib.parse import quote

import psycopg

from plane.store.postgres import PostgresDatabase


def with_options(url: str, options: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}options={quote(options)}"


def tables_in(url: str, schema: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        ).fetchall()
    return {name for (name,) in rows}


async def test_the_schema_the_url_names_is_where_the_plane_keeps_its_tables(bare_postgres_url):
    with psycopg.connect(bare_postgres_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA plane_app")
    url = with_options(bare_postgres_url, "-c search_path=plane_app -c lock_timeout=0")
    db = await PostgresDatabase.connect(url)
    try:
        written = await db.write(
            lambda conn: conn.execute(
                "SELECT current_setting('search_path'), current_setting('lock_timeout')"
            ).fetchone()
        )
        read = await db.fetchall(
            "SELECT current_setting('search_path'), current_setting('lock_timeout')"
        )
    finally:
        await db.close()
    # The URL's schema, and the plane's lock bound (it comes last: it wins).
    assert tuple(written) == ("plane_app", "3s")
    assert tuple(read[0]) == ("plane_app", "3s")
    assert "calls" in tables_in(bare_postgres_url, "plane_app")
    assert "calls" not in tables_in(bare_postgres_url, "public")
