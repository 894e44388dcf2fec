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

The same holds for what the operator's socket is ready for (a frame to
read, room to write a reply's next part): the listener serves its sockets in
the operator's context (`plane.daemon.listener`), so their I/O callbacks
carry it and go first too, instead of behind everything the last pass of the
loop queued.
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
        self._first(first)
        return first

    def _add_callback(self, handle: events.Handle) -> None:
        """An I/O callback, its file ready: the operator's sockets' go first."""
        if handle._cancelled:
            return
        if _operators(handle):
            self._first(handle)
        else:
            self._ready.append(handle)  # type: ignore[attr-defined]

    def _first(self, handle: events.Handle) -> None:
        """Queue `handle` after the operator's callbacks, ahead of the rest.

        The store's threads call this too (`call_soon_threadsafe`) while the
        loop takes from the queue's front: the queue is read by index, never
        iterated (an iterator fails once the queue changes), and each step
        is one atomic operation. What the loop takes meanwhile can only put
        `handle` a few places later than the operator's last, never lose it."""
        ready = self._ready  # type: ignore[attr-defined]
        at = 0
        try:
            while _operators(ready[at]):  # after the operator's own, in their order
                at += 1
        except IndexError:  # the queue's end: every callback in it is the operator's
            pass
        ready.insert(at, handle)


def _operators(handle: events.Handle) -> bool:
    """Whether `handle` is a callback of the operator's: queued as one, or an
    I/O callback registered in the operator's context."""
    if isinstance(handle, _First):
        return True
    context: contextvars.Context | None = getattr(handle, "_context", None)
    return context is not None and context.get(OPERATOR, False)


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """`OperatorFirst` where asyncio's loop has the ready queue it reorders
    (CPython 3.11 to 3.14 do); else asyncio's own loop, which serves every
    request the same, only not the operator's first."""
    base = asyncio.SelectorEventLoop
    probe = base()
    try:
        reorderable = all(
            callable(getattr(probe, name, None)) for name in ("_call_soon", "_add_callback")
        ) and hasattr(probe, "_ready")
    finally:
        probe.close()
    return OperatorFirst if reorderable else base
