"""A plane of a fleet whose start fails on the shared store, on a real
PostgreSQL: the store refuses the fleet's first tick (as a full disk or a
server going away between the plane's first statements and its first
renewal would). The start says one sentence and leaves nothing running."""

from __future__ import annotations

import asyncio
import threading

import pytest

from plane.errors import StoreError
from plane.home import Home
from tests.support.fixtures_plane import launch
from tests.support.fixtures_postgres import open_db, refuse


async def test_a_start_whose_first_renewal_fails_leaves_no_thread_or_lock(
    tmp_path, scripted_llm, postgres_url, monkeypatch
):
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    db = await open_db(tmp_path / "unused.db")
    try:
        await refuse(db, "INSERT", "planes", "the disk is full")
    finally:
        await db.close()
    tasks, threads = asyncio.all_tasks(), set(threading.enumerate())
    with pytest.raises(StoreError, match="The store failed during start-up: the disk is full"):
        await launch(tmp_path, scripted_llm)
    await asyncio.sleep(0)
    left = asyncio.all_tasks() - tasks - {asyncio.current_task()}
    assert [task.get_name() for task in left] == []
    started = [t for t in set(threading.enumerate()) - threads if not t.name.startswith("asyncio_")]
    for thread in started:
        await asyncio.to_thread(thread.join, 5)
    assert [t.name for t in started if t.is_alive()] == []
    assert not Home(tmp_path / "home").socket.exists()
