"""Fan-out: what a loop turn emits is one batch, encoded once for every
subscriber, each turn's token deltas joined — the same text, in order, in
fewer frames; in-process readers get every event."""

from __future__ import annotations

import asyncio
from decimal import Decimal

from plane.daemon.events import QUEUE_LIMIT, EventBus, coalesced
from plane.wire import protocol as p


def delta(agent: str, text: str, turn: int = 1) -> p.TextDelta:
    return p.TextDelta(agent=agent, turn=turn, text=text)


def finished(agent: str, turn: int = 1) -> p.TurnFinished:
    return p.TurnFinished(agent=agent, turn=turn, cost_usd=Decimal(0), usage=p.Usage())


async def test_twenty_subscribers_share_one_encoding_of_a_batch() -> None:
    bus = EventBus()
    subscriptions = [bus.subscribe() for _ in range(20)]
    bus.emit(delta("demo", "hi"))
    bus.emit(finished("demo"))
    got = [await s.next_lines() for s in subscriptions]
    assert len({id(lines) for lines in got}) == 1  # one bytes object, written twenty times
    assert got[0] is not None, "the bus is open"
    assert [p.decode_server_frame(line) for line in got[0].splitlines()] == [
        delta("demo", "hi"),
        finished("demo"),
    ]


async def test_in_process_readers_get_every_event_as_emitted() -> None:
    bus = EventBus()
    subscription = bus.subscribe()
    events: list[p.Event] = [
        delta("demo", "a"),
        delta("scout", "b"),
        delta("demo", "c"),
        finished("demo"),
    ]
    for event in events:
        bus.emit(event)
    assert [await subscription.next() for _ in events] == events
    bus.emit(delta("demo", "later"))  # a batch of the next loop turn
    assert await subscription.next() == delta("demo", "later")


async def test_a_subscription_sees_what_is_emitted_after_it_only() -> None:
    bus = EventBus()
    bus.emit(delta("demo", "before "))
    late = bus.subscribe()  # in the same loop turn as the event before it
    bus.emit(delta("demo", "after"))
    assert await late.next_lines() == p.encode(delta("demo", "after"))


async def test_a_subscriber_that_never_reads_is_dropped_and_the_log_forgets() -> None:
    bus = EventBus()
    stuck, reading = bus.subscribe(), bus.subscribe()
    got: list[bytes] = []

    async def read() -> None:
        while b"10000 " not in (lines := await reading.next_lines() or b""):
            got.append(lines)

    reader = asyncio.create_task(read())
    for n in range(QUEUE_LIMIT + 1):
        bus.emit(delta("demo", f"{n} "))
        if n % 1000 == 0:
            await asyncio.sleep(0)  # a batch of a thousand; the reader takes it
    await asyncio.wait_for(reader, 5)
    assert stuck.dropped and await stuck.next() is None
    assert not reading.dropped and bus.backlog() == 0
    assert len(got) <= 12  # a write a batch, not a write a word


async def test_a_reader_waiting_with_a_sink_is_written_from_the_seal_in_order_once() -> None:
    bus = EventBus()
    written: list[bytes] = []
    taking = True

    def sink(data: bytes) -> bool:
        if taking:
            written.append(data)
        return taking

    subscription = bus.subscribe()
    subscription.sink = sink
    reader = asyncio.create_task(subscription.next_lines())
    await asyncio.sleep(0)  # the reader waits for the next batch
    for n in range(3):
        bus.emit(delta("demo", f"{n} "))
        await asyncio.sleep(0)  # sealed: written from the seal, the reader left waiting
    assert written == [p.encode(delta("demo", f"{n} ")) for n in range(3)]
    assert not reader.done() and bus.backlog() == 0
    taking = False  # the socket is backed up: the reader's task takes the next batch
    bus.emit(delta("demo", "3 "))
    assert await asyncio.wait_for(reader, 1) == p.encode(delta("demo", "3 "))
    assert len(written) == 3
    bus.emit(delta("demo", "4 "))  # the reader is not waiting now: nothing written for it
    await asyncio.sleep(0)
    assert len(written) == 3 and await subscription.next_lines() == p.encode(delta("demo", "4 "))


async def test_close_ends_every_subscription() -> None:
    bus = EventBus()
    subscription = bus.subscribe()
    waiting = asyncio.create_task(subscription.next_lines())
    await asyncio.sleep(0)
    bus.close()
    assert await asyncio.wait_for(waiting, 1) is None


def test_each_turns_deltas_join_up_to_the_next_other_event_and_nothing_else_moves() -> None:
    updated = finished("demo")
    batch: list[p.Event] = [
        delta("demo", "The "),
        delta("demo", "linker "),
        delta("scout", "Look"),
        delta("demo", "lost "),
        delta("demo", "libssl.", turn=2),
        updated,
        delta("demo", "!", turn=2),
    ]
    frames = [p.decode_server_frame(line) for line in coalesced(batch).splitlines()]
    assert frames == [
        delta("demo", "The linker lost "),
        delta("scout", "Look"),
        delta("demo", "libssl.", turn=2),
        updated,
        delta("demo", "!", turn=2),
    ]


async def test_a_subscriber_behind_gets_every_word_in_fewer_frames(start_plane) -> None:
    plane = await start_plane()
    client = await plane.client()
    await client.request(p.Subscribe())
    words = [f"w{i} " for i in range(500)]
    for word in words:  # no await between: all queued before the writer runs
        plane.bus.emit(delta("demo", word))
    plane.bus.emit(finished("demo"))
    frames: list[p.Event] = []

    async def read() -> None:
        async for event in client.events():
            frames.append(event)
            if isinstance(event, p.TurnFinished):
                return

    await asyncio.wait_for(read(), 10)
    deltas = [f for f in frames if isinstance(f, p.TextDelta)]
    assert "".join(d.text for d in deltas) == "".join(words)
    assert len(deltas) < len(words) / 10


PAD = "x" * 1000
"""A kilobyte a frame: the plane asks for a send buffer of megabytes
(`plane.daemon.listener.SEND_BUFFER_BYTES`), which small frames would take
tens of thousands of to fill."""


async def test_a_subscriber_that_stops_reading_gets_every_event_once_in_order(start_plane) -> None:
    """Written from the seal while the socket keeps up, by the connection's
    task once it backs up (nobody reads), and from the seal again after: one
    stream, every event once, in order."""
    plane = await start_plane()
    reader, writer = await asyncio.open_unix_connection(plane.home.socket, limit=2**14)
    writer.write(plane.hello() + p.encode(p.Subscribe(id=2)))
    await reader.readline()  # welcome
    await reader.readline()  # the snapshot
    transport = writer.transport
    sent = 0
    for _ in range(600):  # up to 30,000 frames, ~30 MB unread: past the socket's buffers
        for _ in range(50):
            plane.bus.emit(delta("demo", f"{sent:06d}|{PAD}", turn=sent))  # a frame each
            sent += 1
        await asyncio.sleep(0)
        if plane.bus.backlog() > 0:
            break
    assert plane.bus.backlog() > 0, "the socket never backed up: the test proves nothing"
    plane.bus.emit(finished("demo"))
    texts: list[str] = []
    while True:
        frame = p.decode_server_frame(await asyncio.wait_for(reader.readline(), 10))
        if isinstance(frame, p.TurnFinished):
            break
        assert isinstance(frame, p.TextDelta)
        texts.append(frame.text)
    assert texts == [f"{n:06d}|{PAD}" for n in range(sent)]
    assert not transport.is_closing()
    writer.close()
