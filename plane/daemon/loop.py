"""The daemon's event loop: the operator's callbacks run ahead of the agents'.

With a thousand agents busy the loop is never idle: each of its turns runs
every callback that was ready when it began, hundreds of the agents'. A
request of the operator's hops through the loop several times (its frame
read, each read and write of the store), and each hop used to wait behind
all of them: a `/limit` took several whole turns of the loop. Here a
callback of the operator's request (its context has `OPERATOR` set, as
everything the request awaits does) goes to the front of the ready queue,
behind only the operator's own callbacks, so each hop waits for the
callback running now, not for the queue.
"""

from __future__ import annotations

import asyncio
import contextvars
from asyncio import events
from collections.abc import Callable
from typing import Any

from plane.store.engine import OPERATOR


class _First(events.Handle):
    """A callback of an operator's request, queued ahead of the rest."""


class OperatorFirst(asyncio.SelectorEventLoop):
    """asyncio's loop, whose ready queue puts the operator's callbacks first."""

    def _call_soon(
        self, callback: Callable[..., object], args: Any, context: contextvars.Context | None
    ) -> events.Handle:
        operator = OPERATOR.get() if context is None else context.get(OPERATOR, False)
        if not operator:
            handle: events.Handle = super()._call_soon(callback, args, context)  # type: ignore[misc]
            return handle
        first = _First(callback, args, self, context)
        ready = self._ready  # type: ignore[attr-defined]
        at = 0
        for queued in ready:  # after the operator's own, in their order
            if not isinstance(queued, _First):
                break
            at += 1
        ready.insert(at, first)
        return first


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """`OperatorFirst` where asyncio's loop has the ready queue it reorders
    (CPython 3.11 to 3.14 do); else asyncio's own loop, which serves every
    request the same, only not the operator's first."""
    base = asyncio.SelectorEventLoop
    probe = base()
    try:
        reorderable = callable(getattr(probe, "_call_soon", None)) and hasattr(probe, "_ready")
    finally:
        probe.close()
    return OperatorFirst if reorderable else base
