"""One task per request: on one connection a slow request does not hold up
a fast one, replies go out as they are ready (each with its request's id), a
flood of frames makes at most `MAX_IN_FLIGHT` tasks, and closing lets the
requests in flight finish within the grace and cancels the rest.

A real `Listener` on a real Unix socket; its handler is the test's, so how
slow a request is, is the test's to say."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from plane.daemon import listener as listening
from plane.daemon.events import EventBus
from plane.daemon.listener import MAX_IN_FLIGHT, Listener
from plane.wire import protocol as p

TOKEN = "test-token"
NOON = datetime(2026, 3, 14, 12, tzinfo=UTC)


def snapshot() -> p.Snapshot:
    return p.Snapshot(day=date(2026, 3, 14), now=NOON, resets_at=NOON, agents=[], models=["m"])


class SlowHistory:
    """Answers `status` at once; a `history` waits until `release` is set."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.waiting = 0
        self.arrived = asyncio.Event()
        """Set as each history starts waiting."""

    async def __call__(self, request: p.Request[Any]) -> p.Reply:
        if isinstance(request, p.History):
            self.waiting += 1
            self.arrived.set()
            await self.release.wait()
            return p.HistoryReply(id=request.id, agent=request.agent, messages=[])
        return p.SnapshotReply(id=request.id, snapshot=snapshot())


async def _snapshot() -> p.Snapshot:
    return snapshot()


Say = Callable[[p.Frame], Awaitable[None]]
Hear = Callable[[], Awaitable[p.Frame]]
Served = tuple[Listener, SlowHistory, Say, Hear]


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    handler = SlowHistory()
    listener = Listener(handler, _snapshot, EventBus(), "test", TOKEN)
    socket = tmp_path / "plane.sock"
    await listener.listen_unix(socket)
    reader, writer = await asyncio.open_unix_connection(socket)

    async def say(frame: p.Frame) -> None:
        writer.write(p.encode(frame))
        await writer.drain()

    async def hear() -> p.Frame:
        return p.decode_server_frame(await asyncio.wait_for(reader.readline(), 5))

    await say(p.Hello(id=0, protocol_version=p.PROTOCOL_VERSION, token=TOKEN))
    assert isinstance(await hear(), p.HelloReply)
    yield listener, handler, say, hear
    handler.release.set()
    writer.close()
    await listener.close()


async def started(handler: SlowHistory, count: int) -> None:
    async with asyncio.timeout(5):
        while handler.waiting < count:
            await handler.arrived.wait()
            handler.arrived.clear()


async def test_a_slow_request_does_not_delay_a_status_sent_after_it(served: Served) -> None:
    _, handler, say, hear = served
    await say(p.History(id=1, agent="demo"))
    await say(p.Status(id=2))
    first = await hear()  # answered in turn, this would wait for the history (and time out)
    assert isinstance(first, p.SnapshotReply) and first.id == 2
    assert handler.waiting == 1
    handler.release.set()
    second = await hear()
    assert isinstance(second, p.HistoryReply) and second.id == 1


async def test_a_flood_of_slow_requests_makes_at_most_max_in_flight_tasks(served: Served) -> None:
    _, handler, say, hear = served
    flood = range(1, MAX_IN_FLIGHT + 11)
    for ident in flood:
        await say(p.History(id=ident, agent="demo"))
    await started(handler, MAX_IN_FLIGHT)
    await asyncio.sleep(0.3)  # room for more to start, if the bound let them
    assert handler.waiting == MAX_IN_FLIGHT
    handler.release.set()
    answered = [await hear() for _ in flood]
    assert {frame.id for frame in answered if isinstance(frame, p.HistoryReply)} == set(flood)


async def test_closing_lets_a_request_in_flight_finish_and_its_reply_go_out(
    served: Served,
) -> None:
    listener, handler, say, hear = served
    await say(p.History(id=1, agent="demo"))
    await started(handler, 1)
    closing = asyncio.create_task(listener.close())
    await asyncio.sleep(0.1)
    assert not closing.done()  # it waits for the request
    handler.release.set()
    reply = await hear()
    assert isinstance(reply, p.HistoryReply) and reply.id == 1
    await asyncio.wait_for(closing, 5)


async def test_closing_cancels_what_outlasts_the_grace_and_says_how_many(
    served: Served, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    listener, handler, say, _ = served
    monkeypatch.setattr(listening, "REQUEST_GRACE_S", 0.2)
    await say(p.History(id=1, agent="demo"))
    await say(p.History(id=2, agent="demo"))
    await started(handler, 2)
    with caplog.at_level(logging.WARNING, logger="plane.daemon.listener"):
        await asyncio.wait_for(listener.close(), 5)
    assert "cancelled 2 request(s) still in flight at shutdown" in caplog.text
