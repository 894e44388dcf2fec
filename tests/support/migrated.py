"""A plane's SQLite file with every migration step already run, for the test
planes' homes (`start_plane`, `start_gateway`): a copy of it is at the latest
version, so the plane that opens it runs no step, where each test's plane would
otherwise run every step again on a new file. What the steps do to a new
file, and to an older plane's, is tested on such files (tests/plane/store,
and the upgrade tests on tests/support/old_stores.py)."""

from __future__ import annotations

import asyncio
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from plane.home import Home
from plane.store import open_store


def migrated(path: Path) -> Path:
    """A new store at `path`, made by the plane's own opener (every step run)."""

    async def make() -> None:
        await (await open_store(None, path)).close()

    # In a thread of its own: the test's event loop, if one runs, is left alone.
    with ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, make()).result()
    return path


def lay_store(home: Home, store: Path | None) -> None:
    """Give a new `home` a copy of `store` (`migrated`), made private as the
    plane makes its files; not when the test's store is PostgreSQL
    (`each_store`), nor when the home is there already (a restart, or a home
    the test made, which the plane must find as the test left it)."""
    if store is None or os.environ.get("PLANE_STORE") or home.root.exists():
        return
    home.root.mkdir(mode=0o700, parents=True)
    # Made private before a byte is in it, then copied in the kernel; the
    # plane's start makes the home's other files.
    os.close(os.open(home.db, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    shutil.copyfile(store, home.db)
