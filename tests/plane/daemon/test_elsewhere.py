"""What other planes said, told to this plane's clients once
(plane.daemon.elsewhere): a line this plane writes is in the store a moment
before this plane tells it, and a renewal's look can read it in between."""

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from plane.clock import ManualClock
from plane.daemon.elsewhere import Elsewhere, Said
from plane.history.conversation import Conversation
from plane.store.sqlite import SqliteDatabase
from plane.wire.protocol import Event, MessageAppended


@dataclass
class Telling:
    conversation: Conversation
    said: Said
    elsewhere: Elsewhere
    told: list[Event] = field(default_factory=list)

    def texts(self) -> list[str]:
        return [e.message.text for e in self.told if isinstance(e, MessageAppended)]


@pytest.fixture
async def telling(tmp_path: Path) -> AsyncIterator[Telling]:
    db = await SqliteDatabase.open(tmp_path / "plane.db")
    try:
        conversation = Conversation(db, ManualClock(datetime(2026, 12, 6, 12, tzinfo=UTC)))
        told: list[Event] = []
        said = Said(told.append)
        elsewhere = Elsewhere(conversation, said, lambda: {"demo"})
        await elsewhere.start()
        yield Telling(conversation, said, elsewhere, told)
    finally:
        await db.close()


async def test_a_line_read_by_a_look_before_this_plane_tells_it_is_told_once(telling: Telling):
    written = await telling.conversation.append("demo", "operator", "hello from this plane")
    # A renewal's look, between the write and this plane's telling:
    assert await telling.elsewhere.follow() == {"demo"}
    telling.said.emit(MessageAppended(message=written))  # this plane's own telling, just after
    await telling.elsewhere.follow()  # the next renewal's look
    assert telling.texts() == ["hello from this plane"]


async def test_a_line_this_plane_told_is_not_told_again_by_a_look(telling: Telling):
    written = await telling.conversation.append("demo", "operator", "hi")
    telling.said.emit(MessageAppended(message=written))
    assert await telling.elsewhere.follow() == set()
    assert telling.texts() == ["hi"]
