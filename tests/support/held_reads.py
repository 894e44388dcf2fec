"""A store's reads held just after one of them, until the test lets it go
on: a read under way (a plane reading the ceilings, an agent's settings
again) while something else lands meanwhile.

    read = HeldRead(db, "agent_settings", monkeypatch)
    task = asyncio.ensure_future(roster.reread("demo"))
    await read.held.wait()      # it has read the row, and waits
    ...                         # what lands meanwhile
    read.go_on.set()
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from plane.store.engine import Database


class HeldRead:
    """`db`'s first read from `table` held once it has read, until `go_on` is set."""

    def __init__(self, db: Database, table: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.table = f"FROM {table}"
        self.real = (db.fetchall, db.fetchone)
        self.held = asyncio.Event()
        self.go_on = asyncio.Event()
        monkeypatch.setattr(db, "fetchall", self.fetchall)
        monkeypatch.setattr(db, "fetchone", self.fetchone)

    async def hold(self, sql: str) -> None:
        if self.table in sql and not self.held.is_set():
            self.held.set()
            await self.go_on.wait()

    async def fetchall(self, sql: str, *params: object) -> list[Any]:
        rows = await self.real[0](sql, *params)
        await self.hold(sql)
        return rows

    async def fetchone(self, sql: str, *params: object) -> Any:
        row = await self.real[1](sql, *params)
        await self.hold(sql)
        return row
