"""A plane's SQLite file as an older plane left it: the schema up to a
migration step, for the tests of what a plane makes of it when it opens it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from plane.store.migrations import MIGRATIONS, postgres_own


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
