"""Which store the plane opens: the SQLite file in its home, or PostgreSQL.

Apart from `plane.store.postgres` so that a plane on SQLite (the default) never
loads psycopg: it is imported only when a postgresql:// URL is given.
"""

from __future__ import annotations

from pathlib import Path

from plane.errors import StoreError
from plane.store.engine import Database


def is_postgres(store: str | None) -> bool:
    return bool(store) and str(store).startswith(("postgresql://", "postgres://"))


async def open_store(store: str | None, path: Path) -> Database:
    """The plane's store: PostgreSQL at `store` when it is a postgresql://
    URL, else the SQLite file at `path` (the default)."""
    if not store:
        return await Database.open(path)
    if not is_postgres(store):
        raise StoreError(
            f"{store!r} is not a store the plane can use: give a postgresql:// URL "
            "(PLANE_STORE, or `store:` in agents.yaml), or none for the SQLite file in its home."
        )
    from plane.store.postgres import PostgresDatabase

    return await PostgresDatabase.connect(store)
