"""Fan-out over the real socket: an event is encoded once for every
subscriber, and a subscriber that is behind gets its runs of token deltas
joined — the same text, in order, in fewer frames."""

from __future__ import annotations

import asyncio

from plane.daemon.events import EventBus, Published, coalesced
from plane.wire import protocol as p


def delta(agent: str, text: str, turn: int = 1) -> p.TextDelta:
    return p.TextDelta(agent=agent, turn=turn, text=text)


def finished(agent: str, turn: int = 1) -> p.TurnFinished:
    return p.TurnFinished(agent=agent, turn=turn, cost_usd=0, usage=p.Usage())


def test_twenty_subscribers_share_one_encoding() -> None:
    bus = EventBus()
    subscriptions = [bus.subscribe() for _ in range(20)]
    bus.emit(delta("demo", "hi"))
    got = [s.waiting()[0] for s in subscriptions]
    assert all(len(g) == 1 and isinstance(g[0], Published) for g in got)
    lines = {id(g[0].line) for g in got}
    assert len(lines) == 1


def test_runs_of_one_turns_deltas_join_and_nothing_else_moves() -> None:
    updated = finished("demo")
    batch = [
        delta("demo", "The "),
        delta("demo", "linker "),
        delta("scout", "Look"),
        delta("demo", "lost "),
        delta("demo", "libssl.", turn=2),
        updated,
        delta("demo", "!", turn=2),
    ]
    frames = [p.decode_server_frame(line) for line in coalesced(map(Published, batch)).splitlines()]
    assert frames == [
        delta("demo", "The linker "),
        delta("scout", "Look"),
        delta("demo", "lost "),
        delta("demo", "libssl.", turn=2),
        updated,
        delta("demo", "!", turn=2),
    ]


async def test_a_subscriber_behind_gets_every_word_in_fewer_frames(start_plane) -> None:  # type: ignore[no-untyped-def]
    plane = await start_plane()
    client = await plane.client()
    await client.request(p.Subscribe)
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
