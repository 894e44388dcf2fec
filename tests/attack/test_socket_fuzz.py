"""The socket, fuzzed: every complete line is answered, no connection is lost,
other clients keep being served, and a connection's memory stays bounded.

Against a real plane on its real Unix socket: hypothesis draws frames (JSON of
every shape, the plane's request types with fields of any type) and raw bytes;
fixed cases cover what a generator rarely reaches — truncated frames, frames
over the 1 MiB limit, nesting thousands deep, invalid UTF-8, requests before
the handshake, a flood, and slow-loris clients that send half a line and wait.

A line is complete when it ends in a newline; a blank one (ASCII whitespace
only) is no frame and gets no answer, as in NDJSON. Every other complete line
gets exactly one reply (an error, or the request's answer). After each batch a
probe (a `status` with an id no batch uses) proves the batch was answered in
full and the connection still works. The tally is printed at the end (run with
`-s` to see it): the README's "N frames answered, 0 connections lost".
"""

from __future__ import annotations

import asyncio
import itertools
import json
import tracemalloc
from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plane.wire import protocol as p
from tests.support.fixtures_examples import examples
from tests.support.fixtures_plane import RunningPlane, StartPlane

TALLY: Counter[str] = Counter()
REPLIES = {"welcome", "snapshot", "sent", "messages", "agent_created", "ledger", "ok", "error"}
PROBES = itertools.count(10**15)
"""Ids of the probes: far from anything hypothesis draws by chance."""
FUZZ = settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module", autouse=True)
def tally() -> Iterator[None]:
    yield
    print(
        f"\nsocket fuzz: {TALLY['sent']} frames sent, {TALLY['answered']} answered, "
        f"{TALLY['lost']} connections lost"
    )


class Conn:
    """A raw connection to the plane, counting what it sends and hears."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, plane, *, greet: bool = True, limit: int = 8 << 20) -> Conn:
        """`limit`: how much this client buffers before it stops reading
        (asyncio reads on up to twice that, unasked)."""
        reader, writer = await asyncio.open_unix_connection(plane.home.socket, limit=limit)
        conn = cls(reader, writer)
        if greet:
            [welcome] = await conn.exchange(plane.hello())
            assert welcome["type"] == "welcome"
        return conn

    async def exchange(
        self, data: bytes, within: float = 30, expected: int | None = None
    ) -> list[dict]:
        """Send `data`, then a probe; every reply but the probe's, checked
        to be one per complete non-blank line of `data` (or `expected`, when
        the first line began in an earlier write). Requests are answered
        concurrently, so the probe's reply may come before theirs."""
        if expected is None:
            expected = sum(1 for line in data.split(b"\n")[:-1] if line.strip())
        probe = next(PROBES)
        self.writer.write(data + p.encode(p.Status(id=probe)))
        TALLY["sent"] += expected + 1
        try:
            await self.writer.drain()
            replies = await asyncio.wait_for(self._until(probe, expected), within)
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            TALLY["lost"] += 1
            raise
        TALLY["answered"] += len(replies) + 1
        assert len(replies) == expected, (data[:200], replies)
        return replies

    async def _until(self, probe: int, expected: int) -> list[dict]:
        replies: list[dict] = []
        probed = False
        while not probed or len(replies) < expected:
            line = await self.reader.readline()
            if not line.endswith(b"\n"):
                raise asyncio.IncompleteReadError(line, None)
            p.decode_server_frame(line)  # every frame the plane sends is one of its own
            frame = json.loads(line)
            if frame["type"] not in REPLIES:
                continue  # an event, on a connection that subscribed
            if frame.get("id") == probe:
                assert frame["type"] == "snapshot"
                probed = True
            else:
                replies.append(frame)
        return replies

    def close(self) -> None:
        self.writer.close()


async def untouched(plane) -> None:
    """Nothing the fuzz sent changed anything."""
    assert [s.name for s in plane.services.roster] == ["demo", "scout"]
    assert (await plane.rows.state("demo")).limit_usd == 1
    assert not plane.plane.stop_event.is_set()


# ── hypothesis ──────────────────────────────────────────────────────────────

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
NOT_OURS = st.text(max_size=12).filter(lambda s: s not in ("demo", "scout", "scripted-model"))
TYPES = ["subscribe", "status", "send", "history", "new_agent", "ledger"]
"""The plane's requests but `hello` and `stop` (which would end the run)."""
ENDS = ("hello", "stop")
FRAMES = st.fixed_dictionaries(
    {"type": st.sampled_from(TYPES) | st.text(max_size=12).filter(lambda t: t not in ENDS)},
    optional={
        "id": st.integers() | JSON,
        "agent": NOT_OURS | JSON,
        "text": st.text(max_size=50) | JSON,
        "limit": st.integers() | JSON,
        "before_id": st.integers() | JSON,
        "name": NOT_OURS | JSON,
        "model": NOT_OURS | JSON,
        "role": JSON,
        "day": st.dates().map(str) | JSON,
        "extra": JSON,
    },
)


@FUZZ
@given(frames=st.lists(FRAMES | JSON, min_size=1, max_size=5))
@pytest.mark.slow
async def test_any_json_gets_one_reply_a_line(start_plane, frames):
    plane = await _plane(start_plane)
    conn = await _conn(plane)
    lines = b"".join(json.dumps(frame).encode() + b"\n" for frame in frames)
    await conn.exchange(lines)
    await untouched(plane)


@FUZZ
@given(data=st.binary(max_size=400), ends=st.sampled_from([b"\n", b"\r\n", b"\n\n"]))
async def test_any_bytes_get_one_reply_a_line(start_plane, data, ends):
    plane = await _plane(start_plane)
    conn = await _conn(plane)
    await conn.exchange(data + ends)
    await untouched(plane)


_planes: dict[int, RunningPlane] = {}
_conns: dict[int, Conn] = {}
"""One plane for all of a test's examples, and one connection to it."""


async def _plane(start_plane: StartPlane) -> RunningPlane:
    """One plane for all of a test's examples (the fixture is the test's)."""
    key = id(start_plane)
    if key not in _planes:
        _planes.clear()
        _conns.clear()
        _planes[key] = await start_plane()
    return _planes[key]


async def _conn(plane: RunningPlane) -> Conn:
    key = id(plane)
    conn = _conns.get(key)
    if conn is None:
        conn = _conns[key] = await Conn.open(plane)
    return conn


# ── fixed cases ─────────────────────────────────────────────────────────────

SEND = p.encode(p.Send(id=41, agent="demo", text="/limit off"))


async def test_truncated_frames_each_get_an_error(start_plane):
    plane = await start_plane()
    conn = await Conn.open(plane)
    cuts = b"".join(SEND[:n].rstrip(b"\n") + b"\n" for n in range(1, len(SEND) - 1))
    replies = await conn.exchange(cuts)
    assert {r["code"] for r in replies} == {"bad_frame"}
    await untouched(plane)
    assert await plane.services.conversation.history("demo") == []


@pytest.mark.parametrize("size", [p.MAX_FRAME_BYTES + 1, 3 * p.MAX_FRAME_BYTES, 9 << 20])
async def test_a_frame_over_the_limit_gets_one_error(start_plane, size):
    plane = await start_plane()
    conn = await Conn.open(plane)
    huge = b'{"type":"send","id":5,"agent":"demo","text":"' + b"a" * size + b'"}\n'
    replies = await conn.exchange(huge + SEND.replace(b"/limit off", b"/limit 2"))
    assert [r.get("code", r["type"]) for r in replies] == ["too_large", "sent"]
    assert (await plane.rows.state("demo")).limit_usd == 2, "the next frame was read whole"


@pytest.mark.parametrize("depth", [1_000, 10_000, 200_000])
async def test_frames_nested_deep_get_an_error(start_plane, depth):
    plane = await start_plane()
    conn = await Conn.open(plane)
    frames = [
        b"[" * depth + b"\n",
        b"[" * depth + b"]" * depth + b"\n",
        b'{"type":"status","id":3,"x":' + b'{"a":' * depth + b"1" + b"}" * depth + b"}\n",
    ]
    for frame in frames:
        if len(frame) <= p.MAX_FRAME_BYTES:
            [reply] = await conn.exchange(frame)
            assert reply["code"] == "bad_frame"


async def test_invalid_utf8_and_unknown_types_change_nothing(start_plane):
    plane = await start_plane()
    conn = await Conn.open(plane)
    lines = [
        b'{"type":"send","id":1,"agent":"demo","text":"\xff\xfe"}',
        b'{"type":"send","id":2,"agent":"demo","text":"\xed\xa0\x80"}',  # a lone surrogate
        b'{"type":"send","id":3,"agent":"demo","text":"\\ud800"}',
        b"\xc0\xaf\xc0\xaf",
        b'{"type":"launch","id":4}',
        b'{"type":"Send","id":5,"agent":"demo","text":"hi"}',
        b'{"type":null,"id":6}',
        b'{"id":7}',
        b'"send"',
        b"\x00" * 100,
    ]
    replies = await conn.exchange(b"\n".join(lines) + b"\n")
    assert {r["code"] for r in replies} == {"bad_frame"}
    assert [r["id"] for r in replies[4:8]] == [4, 5, 6, 7], "the id is named when it is readable"
    await untouched(plane)
    assert await plane.services.conversation.history("demo") == []


async def test_requests_before_the_handshake_are_answered_and_the_handshake_still_works(
    start_plane,
):
    plane = await start_plane()
    conn = await Conn.open(plane, greet=False)
    early = [SEND, p.encode(p.Subscribe(id=2)), p.encode(p.NewAgent(id=3, name="x", model="m"))]
    conn.writer.write(b"".join(early) + b"garbage\n")
    await conn.writer.drain()
    TALLY["sent"] += 4
    replies = [json.loads(await conn.reader.readline()) for _ in range(4)]
    TALLY["answered"] += 4
    assert [(r["id"], r["code"]) for r in replies] == [
        (41, "version"),
        (2, "version"),
        (3, "version"),
        (None, "bad_frame"),
    ]
    [welcome] = await conn.exchange(plane.hello())
    assert welcome["type"] == "welcome"
    await untouched(plane)


async def test_a_flood_is_answered_whole_while_another_client_is_served(start_plane):
    plane = await start_plane()
    flood = await Conn.open(plane)
    frames = [b"junk", p.encode(p.Status(id=9)).rstrip(), b'{"type":"history","id":8}']
    data = b"\n".join(frames * 2000) + b"\n"
    waiting = asyncio.create_task(flood.exchange(data, within=120))
    await asyncio.sleep(0.05)  # the flood is being answered
    other = await Conn.open(plane)
    [status] = await asyncio.wait_for(other.exchange(p.encode(p.Status(id=1))), 5)
    assert status["type"] == "snapshot"
    replies = await waiting
    assert len(replies) == 6000
    await untouched(plane)


async def test_slow_loris_clients_do_not_block_the_others(start_plane):
    plane = await start_plane()
    slow = [await Conn.open(plane) for _ in range(20)]
    for conn in slow:
        conn.writer.write(SEND[: len(SEND) // 2])  # half a line, and then nothing
        await conn.writer.drain()
    fresh = await asyncio.wait_for(Conn.open(plane), 5)
    [status] = await asyncio.wait_for(fresh.exchange(p.encode(p.Status(id=1))), 5)
    assert status["type"] == "snapshot"
    unsaid = await asyncio.wait_for(Conn.open(plane, greet=False), 5)
    unsaid.writer.write(b'{"type":"hel')  # nor is one that never finishes its hello
    [status] = await asyncio.wait_for(fresh.exchange(p.encode(p.Status(id=2))), 5)
    for conn in slow:  # the rest of the line, at last: one answer each
        rest = SEND[len(SEND) // 2 :].replace(b"/limit off", b"/limit 3")
        [reply] = await conn.exchange(rest, expected=1)
        assert reply["type"] == "sent"
    assert (await plane.rows.state("demo")).limit_usd == 3


@pytest.mark.slow
async def test_a_connection_holds_at_most_one_frame_whatever_it_sends(start_plane):
    """20 MiB with no newline, and 3,000 requests whose replies are not read:
    the plane's memory grows by about one frame, not by what was sent."""
    plane = await start_plane()
    conn = await Conn.open(plane)
    chunk = b"x" * (64 * 1024)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for _ in range(320):
            conn.writer.write(chunk)
            await conn.writer.drain()
        endless = tracemalloc.get_traced_memory()[1] - base
        [reply] = await conn.exchange(b"\n", expected=1)
        assert reply["code"] == "too_large"

        # A client that reads nothing: its own buffer (counted here too, in
        # this process) stops at a few frames, so what grows is the plane's.
        unread = await Conn.open(plane, limit=64 * 1024)
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        unread.writer.write(p.encode(p.Status(id=1)) * 3000)
        await asyncio.sleep(1)  # the plane answers until the socket is full, then waits
        piled = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    replies = 0
    while replies < 3000:  # and every reply is there once they are read
        json.loads(await asyncio.wait_for(unread.reader.readline(), 30))
        replies += 1
    TALLY["sent"] += 3000
    TALLY["answered"] += replies
    print(f"\nbuffered: {endless / 2**20:.2f} MiB for 20 MiB sent, {piled / 2**20:.2f} MiB unread")
    assert endless < 3 * p.MAX_FRAME_BYTES, "the plane kept more than a frame of an endless line"
    assert piled < 4 * p.MAX_FRAME_BYTES, "the plane piled up replies nobody read"
    await untouched(plane)
