"""A plane's SQLite file with every migration step already run, for the test
planes' homes (`start_plane`, `start_gateway`): a copy of it is at the latest
version, so the plane that opens it runs no step, where each test's plane would
otherwise run every step again on a new file. What the steps do to a new
file, and to an older plane's, is tested on such files (tests/plane/store,
and the upgrade tests on tests/support/old_stores.py).

Beside it, the compression's ref store as the plane's first start leaves it
(its table made, nothing in it): a plane made that on every start, its
file's first writes and their checkpoint at the stop, 1-2 of the ~10 CPU-ms
of a test plane's start and stop. What a new or damaged ref store does is
tested on such files (tests/plane/compress, tests/attack/test_ref_inbox.py,
and the homes a test makes itself, which get no copy)."""

from __future__ import annotations

import asyncio
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from plane.economy.compress.refs import RefStore
from plane.home import Home
from plane.store import open_store

REFS = Home(Path("home")).refs_db.name
"""The ref store's file name in a home, and beside the migrated store."""


def migrated(path: Path) -> Path:
    """A new store at `path`, made by the plane's own opener (every step run),
    and beside it a new ref store (`REFS`), made by the plane's own class."""

    async def make() -> None:
        await (await open_store(None, path)).close()

    # In a thread of its own: the test's event loop, if one runs, is left alone.
    with ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, make()).result()
    RefStore(path.with_name(REFS)).close()
    return path


def lay_store(home: Home, store: Path | None) -> None:
    """Give a new `home` a copy of `store` (`migrated`) and of the ref store
    beside it, made private as the plane makes its files; not when the test's
    store is PostgreSQL (`each_store`), nor when the home is there already (a
    restart, or a home the test made, which the plane must find as the test
    left it)."""
    if store is None or os.environ.get("PLANE_STORE") or home.root.exists():
        return
    home.root.mkdir(mode=0o700, parents=True)
    _copy_private(store, home.db)
    _copy_private(store.with_name(REFS), home.refs_db)


def _copy_private(source: Path, target: Path) -> None:
    """`target` made private before a byte is in it, then `source` copied in
    the kernel; the plane's start makes the home's other files."""
    os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    shutil.copyfile(source, target)
