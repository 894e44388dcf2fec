"""What other planes said, told to this plane's clients once
(plane.daemon.elsewhere): a line this plane writes is in the store a moment
before this plane tells it, and a renewal's look can read it in between."""

from datetime import UTC, datetime
from pathlib import Path

from plane.clock import ManualClock
from plane.daemon.elsewhere import Elsewhere, Said
from plane.history.conversation import Conversation
from plane.store.sqlite import SqliteDatabase
from plane.wire.protocol import Event, MessageAppended


async def test_a_line_read_by_a_look_before_this_plane_tells_it_is_told_once(tmp_path: Path):
    db = await SqliteDatabase.open(tmp_path / "plane.db")
    try:
        conversation = Conversation(db, ManualClock(datetime(2026, 12, 6, 12, tzinfo=UTC)))
        told: list[Event] = []
        said = Said(told.append)
        elsewhere = Elsewhere(conversation, said, lambda: {"demo"})
        await elsewhere.start()
        written = await conversation.append("demo", "operator", "hello from this plane")
        assert await elsewhere.follow() == {"demo"}  # the look, between the write and the telling
        said.emit(MessageAppended(message=written))  # this plane's own telling, just after
        await elsewhere.follow()  # the next renewal's look
        assert [e.message.text for e in told if isinstance(e, MessageAppended)] == [
            "hello from this plane"
        ]
    finally:
        await db.close()


async def test_a_line_this_plane_told_is_not_told_again_by_a_look(tmp_path: Path):
    db = await SqliteDatabase.open(tmp_path / "plane.db")
    try:
        conversation = Conversation(db, ManualClock(datetime(2026, 12, 6, 12, tzinfo=UTC)))
        told: list[Event] = []
        said = Said(told.append)
        elsewhere = Elsewhere(conversation, said, lambda: {"demo"})
        await elsewhere.start()
        said.emit(MessageAppended(message=await conversation.append("demo", "operator", "hi")))
        assert await elsewhere.follow() == set()
        assert len(told) == 1
    finally:
        await db.close()
