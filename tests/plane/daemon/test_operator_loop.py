"""The daemon's loop runs the operator's callbacks ahead of the agents'
(`plane.daemon.loop`): counted in callbacks, never timed."""

from __future__ import annotations

import asyncio
import contextvars
import json
import socket
import sqlite3
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVarTuple

from plane.daemon.loop import OperatorFirst, loop_factory
from plane.store.engine import OPERATOR
from plane.wire import protocol as p


def operators() -> contextvars.Context:
    context = contextvars.copy_context()
    context.run(OPERATOR.set, True)
    return context


def test_the_operators_callbacks_go_before_a_thousand_queued_in_their_order():
    loop = OperatorFirst()
    order: list[object] = []
    try:
        for n in range(1000):
            loop.call_soon(order.append, n)
        loop.call_soon(order.append, "first", context=operators())
        loop.call_soon(order.append, "second", context=operators())
        loop.call_soon(loop.stop)
        loop.run_forever()
    finally:
        loop.close()
    assert order == ["first", "second", *range(1000)]


def test_a_request_that_hops_five_times_waits_for_none_of_a_thousand_busy_tasks():
    """Each hop of the operator's request (an await) used to wait for every
    agent's callback queued before it: five hops, five thousand steps."""

    async def main() -> int:
        steps = 0
        stop = False

        async def agent() -> None:
            nonlocal steps
            while not stop:
                steps += 1
                await asyncio.sleep(0)

        async def request() -> int:
            OPERATOR.set(True)
            before = steps
            for _ in range(5):
                await asyncio.sleep(0)
            return steps - before

        agents = [asyncio.ensure_future(agent()) for _ in range(1000)]
        await asyncio.sleep(0)
        took = await asyncio.ensure_future(request())
        stop = True
        await asyncio.gather(*agents)
        return took

    with asyncio.Runner(loop_factory=OperatorFirst) as runner:
        steps = runner.run(main())
    assert steps <= 1000, f"the agents took {steps} steps while the request hopped five times"


def test_plane_serve_uses_it_where_asyncio_has_the_queue_it_reorders(monkeypatch):
    assert loop_factory() is OperatorFirst  # this Python's asyncio has it
    monkeypatch.delattr(asyncio.BaseEventLoop, "_call_soon")
    assert loop_factory() is asyncio.SelectorEventLoop, "a Python without it still serves"


def test_the_operators_socket_is_read_before_a_thousand_queued_callbacks():
    """A frame arrives on a socket the operator's context reads (the
    listener's): its read runs before the agents' callbacks the last pass
    queued, not after them."""
    loop = OperatorFirst()
    order: list[object] = []
    ours, theirs = socket.socketpair()
    try:
        ours.setblocking(False)
        operators().run(loop.add_reader, ours.fileno(), lambda: order.append(ours.recv(16)))
        for n in range(1000):
            loop.call_soon(order.append, n)
        theirs.send(b"status")
        loop.call_soon(loop.stop)
        loop.run_forever()
    finally:
        loop.close()
        ours.close()
        theirs.close()
    assert order == [b"status", *range(1000)]


async def test_the_plane_s_socket_is_read_in_the_operator_s_context(tmp_path):
    """The listener's sockets listen as the operator: a connection's reads,
    and the requests they carry, run in the operator's context before any
    handler of the plane's sets it (the API sets it again for its writes)."""
    from plane.daemon.events import EventBus
    from plane.daemon.listener import Listener
    from plane.wire.framing import PROTOCOL_VERSION

    seen: list[bool] = []

    async def handle(request: p.Request[Any]) -> p.Reply:
        seen.append(OPERATOR.get())
        return p.Error(id=request.id, code="invalid", message="Noted.")

    async def snapshot() -> p.Snapshot:
        raise AssertionError("no snapshot is asked for")

    listener = Listener(handle, snapshot, EventBus(), "test", "token")
    path = tmp_path / "plane.sock"
    await listener.listen_unix(path)
    try:
        reader, writer = await asyncio.open_unix_connection(path)
        hello = {"type": "hello", "id": 1, "protocol_version": PROTOCOL_VERSION, "token": "token"}
        writer.write(json.dumps(hello).encode() + b"\n")
        writer.write(b'{"type": "history", "id": 2, "agent": "demo"}\n')
        await writer.drain()
        assert b'"welcome"' in await reader.readline()
        assert b'"Noted."' in await reader.readline()
        writer.close()
    finally:
        await listener.close()
    assert seen == [True]


Ts = TypeVarTuple("Ts")


class _Noting(OperatorFirst):
    """The loop, noting when another thread hands it the answer to the read
    below (by what it carries: the threads may still be finishing the
    start's last deliveries)."""

    def __init__(self) -> None:
        super().__init__()
        self.handed = threading.Event()

    def call_soon_threadsafe(
        self,
        callback: Callable[[*Ts], object],
        *args: *Ts,
        context: contextvars.Context | None = None,
    ) -> asyncio.Handle:
        handle = super().call_soon_threadsafe(callback, *args, context=context)
        rows = args[-1] if args else None
        if isinstance(rows, list) and rows and isinstance(rows[0], sqlite3.Row):
            if [tuple(row) for row in rows] == [("read",)]:
                self.handed.set()
        return handle


def test_the_operators_read_is_answered_before_a_thousand_queued_callbacks(tmp_path):
    """The store's answer to an operator's read (its own reader's thread)
    arrives while the busy loop runs a pass: it is taken ahead of the
    agents' callbacks that pass queued, not after them."""
    from plane.store.sqlite import SqliteDatabase

    order: list[object] = []

    async def main() -> None:
        db = await SqliteDatabase.open(tmp_path / "plane.db")
        loop = asyncio.get_running_loop()
        assert isinstance(loop, _Noting)

        async def operators_read() -> None:
            OPERATOR.set(True)
            [row] = await db.fetchall("SELECT 'read' AS what")
            order.append(row["what"])

        def a_busy_pass() -> None:  # the answer is handed over while this pass runs
            assert loop.handed.wait(10)

        try:
            reading = asyncio.ensure_future(operators_read())
            loop.handed.clear()
            loop.call_soon(a_busy_pass)
            for n in range(1000):
                loop.call_soon(order.append, n)
            await reading
        finally:
            await db.close()

    with asyncio.Runner(loop_factory=_Noting) as runner:
        runner.run(main())
    assert order.index("read") < 1000, f"answered after {order.index('read')} of the agents'"


def test_the_operators_callbacks_handed_over_from_threads_all_arrive_while_the_loop_is_busy():
    """The store's threads hand the operator's outcomes to the loop
    (`call_soon_threadsafe` in the operator's context) while the loop pops
    and appends its own queue: none of them may fail or be lost. Reordering
    the queue from another thread raised "deque mutated during iteration" in
    the store's writer, which then wrote nothing more: the plane hung."""
    threads, each = 4, 3000
    loop = OperatorFirst()
    arrived: list[int] = []
    failures: list[BaseException] = []
    busy = True

    def spin() -> None:  # an agent's callbacks keep the queue moving
        if busy:
            loop.call_soon(spin)

    def hand_over() -> None:
        try:
            for n in range(each):
                loop.call_soon_threadsafe(arrived.append, n, context=operators())
        except BaseException as exc:  # the test reports it
            failures.append(exc)

    async def main() -> None:
        nonlocal busy
        for _ in range(200):
            loop.call_soon(spin)
        workers = [threading.Thread(target=hand_over) for _ in range(threads)]
        for worker in workers:
            worker.start()
        while any(worker.is_alive() for worker in workers) or len(arrived) < threads * each:
            if failures:
                break
            await asyncio.sleep(0.001)
        busy = False

    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the threads interleave at every few bytecodes
    try:
        loop.run_until_complete(asyncio.wait_for(main(), 60))
    finally:
        sys.setswitchinterval(switching)
        loop.close()
    assert failures == []
    assert len(arrived) == threads * each
