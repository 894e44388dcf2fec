"""A plane's store as an older plane left it: the schema up to a migration
step, for the tests of what a plane makes of it when it opens it (a SQLite
file, or a PostgreSQL database as CREATE DATABASE made it)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from plane.store.migrations import MIGRATIONS, postgres_own
from plane.store.postgres import PRELUDE
from plane.store.postgres_dialect import Connection, ddl


class DecimalSum:
    """`decimal_sum`, which the step that made `spend` calls (the files made
    here have no calls by then to sum)."""

    def step(self, value: object, /) -> None:
        raise AssertionError("nothing to sum")

    def finalize(self) -> int:
        return 0


def sqlite_before(path: Path, step: int) -> sqlite3.Connection:
    """A new file at `path` with the schema of `MIGRATIONS[:step]` and that
    version: open, for the test to write its rows, commit and close."""
    old = sqlite3.connect(path)
    old.create_aggregate("decimal_sum", 1, DecimalSum)
    for script in MIGRATIONS[:step]:
        if not postgres_own(script):
            old.executescript(script)
    old.execute(f"PRAGMA user_version = {step}")
    return old


@contextmanager
def postgres_before(url: str, step: int) -> Iterator[Connection]:
    """The database at `url` (bare: no schema yet) given the schema of
    `MIGRATIONS[:step]` and that version, as the plane's own migration
    makes it; the connection the plane's writes see, for the test to write
    its rows, committed at the end of the block."""
    with psycopg.connect(url) as pg:
        for statement in PRELUDE:
            pg.execute(statement)
        for script in MIGRATIONS[:step]:
            for statement in ddl(script):
                pg.execute(statement)
        pg.execute("INSERT INTO plane_schema (version) VALUES (%s)", (step,))
        yield Connection(pg)
