"""The daemon's loop runs the operator's callbacks ahead of the agents'
(`plane.daemon.loop`): counted in callbacks, never timed."""

from __future__ import annotations

import asyncio
import contextvars

from plane.daemon.loop import OperatorFirst, loop_factory
from plane.store.engine import OPERATOR


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
