"""The PostgreSQL fixtures (tests/support/postgres.py), and `each_store`: a
test or module that uses it runs once on each engine.

    pytestmark = pytest.mark.usefixtures("each_store")

On "postgresql" it sets `PLANE_STORE` to a database of the test's own, so
every plane the test starts (and `open_db`) uses it; on "sqlite" nothing is
set and the store is the SQLite file in the plane's home, as by default.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plane.store import open_store
from plane.store.engine import Database
from tests.support.postgres import (
    SHARED,
    bare_postgres_url,
    postgres_cluster,
    postgres_database,
    postgres_server,
    postgres_url,
    shared_directory,
    stop_shared,
)

__all__ = [
    "bare_postgres_url",
    "each_store",
    "open_db",
    "postgres_cluster",
    "postgres_database",
    "postgres_server",
    "postgres_url",
]


@pytest.fixture(params=["sqlite", "postgresql"])
def each_store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "postgresql":
        url = request.getfixturevalue("postgres_url")
        monkeypatch.setenv("PLANE_STORE", url)
    else:
        monkeypatch.delenv("PLANE_STORE", raising=False)
    yield request.param


_SHARE = pytest.StashKey[Path]()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller names each worker the directory of the run's one server."""
    config = node.config
    if _SHARE not in config.stash:
        config.stash[_SHARE] = shared_directory()
    node.workerinput[SHARED] = str(config.stash[_SHARE])


def pytest_unconfigure(config: pytest.Config) -> None:
    if _SHARE in config.stash:
        stop_shared(config.stash[_SHARE])


async def open_db(path: Path) -> Database:
    """The store a plane would open: PLANE_STORE's when set, else the file at `path`."""
    import os

    return await open_store(os.environ.get("PLANE_STORE"), path)


async def refuse(db: Database, operation: str, table: str, message: str) -> None:
    """Make the store refuse every `operation` (INSERT, UPDATE) on `table`
    with `message`, as a disk or a constraint would: a trigger, in each
    engine's dialect."""
    from plane.store.postgres import PostgresDatabase

    if isinstance(db, PostgresDatabase):
        statements = [
            "CREATE OR REPLACE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS"
            f" $$ BEGIN RAISE EXCEPTION '{message}'; END $$",
            f"CREATE TRIGGER refuse BEFORE {operation} ON {table}"
            " FOR EACH ROW EXECUTE FUNCTION refuse()",
        ]
    else:
        statements = [
            f"CREATE TRIGGER refuse BEFORE {operation} ON {table}"
            f" BEGIN SELECT RAISE(ABORT, '{message}'); END"
        ]

    def create(conn):
        for statement in statements:
            conn.execute(statement)

    await db.write(create)
