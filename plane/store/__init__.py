"""The plane's store: where the ledger, the conversations and the leases are kept.

- `engine`: the design both engines share (one writer that owns its
  connection, group commit, one reader), the `Database` every layer above
  is handed;
- `sqlite`: the SQLite file in the plane's home (the default);
- `postgres` (with `postgres_dialect`, `postgres_links`): PostgreSQL, for
  several planes on one store;
- `migrations`: the schema's steps; `fence`: the lease a write is made under.

Importing this package loads none of them: `open_store` loads the engine it
opens, so a plane on SQLite (the default) never loads psycopg.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from plane.errors import StoreError

if TYPE_CHECKING:
    from plane.store.engine import Database
    from plane.store.postgres_links import Changed

__all__ = ["is_postgres", "open_store"]


def is_postgres(store: str | None) -> bool:
    return bool(store) and str(store).startswith(("postgresql://", "postgres://"))


async def open_store(store: str | None, path: Path, *, changed: Changed | None = None) -> Database:
    """The plane's store: PostgreSQL at `store` when it is a postgresql://
    URL, else the SQLite file at `path` (the default). `changed` is told when
    a shared store goes away and comes back (a file in the home never does)."""
    if not store:
        from plane.store.sqlite import SqliteDatabase

        return await SqliteDatabase.open(path)
    if not is_postgres(store):
        raise StoreError(
            f"{store!r} is not a store the plane can use: give a postgresql:// URL "
            "(PLANE_STORE, or `store:` in agents.yaml), or none for the SQLite file in its home."
        )
    from plane.store.postgres import PostgresDatabase

    return await PostgresDatabase.connect(store, changed=changed)
