"""The model's history (plane.history.transcript): where the plane is its
store's only writer, a turn does not read the whole history back from the
store each time, and what it keeps says what the store says."""

from pathlib import Path

import pytest

from plane.history import transcript as module
from plane.history.transcript import Transcript
from plane.providers.base import ChatMessage, ToolCall
from plane.store.sqlite import SqliteDatabase

ASKED = ChatMessage("user", "what is in the repo?")
ANSWERED = (
    ChatMessage("assistant", "", (ToolCall("c1", "list_files", '{"path": "."}'),)),
    ChatMessage("tool", "README.md", tool_call_id="c1"),
    ChatMessage("assistant", "A README."),
)


async def test_a_history_is_read_once_and_kept_as_it_is_written(tmp_path: Path):
    db = await SqliteDatabase.open(tmp_path / "plane.db")
    try:
        kept = Transcript(db, only_writer=True)
        await kept.extend("demo", [ASKED])
        reads = db.counts.reads
        assert await kept.load("demo") == [ASKED]
        await kept.extend("demo", list(ANSWERED))
        assert await kept.load("demo") == [ASKED, *ANSWERED]
        await kept.replace("demo", [ANSWERED[-1]])
        assert await kept.load("demo") == [ANSWERED[-1]]
        assert db.counts.reads - reads == 1
        # What it kept is what the store holds: read afresh, the same.
        assert await Transcript(db).load("demo") == [ANSWERED[-1]]
    finally:
        await db.close()


async def test_a_history_handed_out_cannot_change_what_is_kept(tmp_path: Path):
    db = await SqliteDatabase.open(tmp_path / "plane.db")
    try:
        kept = Transcript(db, only_writer=True)
        await kept.extend("demo", [ASKED])
        (await kept.load("demo")).append(ANSWERED[-1])
        assert await kept.load("demo") == [ASKED]
    finally:
        await db.close()


async def test_histories_kept_stay_within_their_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(module, "CACHE_CHARS", 2 * len(ASKED.content))
    db = await SqliteDatabase.open(tmp_path / "plane.db")
    try:
        kept = Transcript(db, only_writer=True)
        for agent in ("a", "b", "c"):
            await kept.extend(agent, [ASKED])
            await kept.load(agent)
        reads = db.counts.reads
        assert await kept.load("c") == [ASKED]
        assert await kept.load("b") == [ASKED]
        assert db.counts.reads == reads  # the two used last are kept
        assert await kept.load("a") == [ASKED]
        assert db.counts.reads == reads + 1  # the one used longest ago was let go
    finally:
        await db.close()


async def test_rows_changed_elsewhere_are_read_again_once_forgotten(tmp_path: Path):
    db = await SqliteDatabase.open(tmp_path / "plane.db")
    try:
        kept = Transcript(db, only_writer=True)
        await kept.extend("demo", [ASKED])
        await kept.load("demo")
        await db.write(lambda conn: conn.execute("DELETE FROM context WHERE agent = 'demo'"))
        kept.forget("demo")  # as a delete or a rename does, in its commit
        assert await kept.load("demo") == []
    finally:
        await db.close()


async def test_a_plane_sharing_its_store_reads_the_store_each_time(tmp_path: Path):
    db = await SqliteDatabase.open(tmp_path / "plane.db")
    try:
        shared = Transcript(db)
        await shared.extend("demo", [ASKED])
        await shared.load("demo")
        await db.write(lambda conn: conn.execute("DELETE FROM context WHERE agent = 'demo'"))
        assert await shared.load("demo") == []  # another plane's write, seen
    finally:
        await db.close()
