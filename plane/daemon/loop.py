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

And they are looked at during a pass, not only between passes: asyncio asks
its selector which sockets are ready once a pass, and a busy pass runs
hundreds of the agents' callbacks (a trivial reply to the operator waited
32 ms at the median, 231 ms at the p99, with 1,000 agents busy). The
operator's sockets are also in a selector of their own, looked at (without
waiting) at most every `LOOK_S` as callbacks are queued; what is ready goes
to the front of the queue, to run after the callback running now.
"""

from __future__ import annotations

import asyncio
import contextvars
import selectors
import threading
import time
from asyncio import events
from collections.abc import Callable
from typing import Any

from plane.store.engine import OPERATOR

LOOK_S = 0.002
"""How often, at most, a pass looks at the operator's sockets between callbacks."""


class _First(events.Handle):
    """A callback of an operator's request, queued ahead of the rest."""


class OperatorFirst(asyncio.SelectorEventLoop):
    """asyncio's loop, whose ready queue puts the operator's callbacks first."""

    def __init__(self, selector: selectors.BaseSelector | None = None) -> None:
        self._operators_sockets = selectors.DefaultSelector()
        """The sockets whose reader or writer is the operator's, by what it waits for."""
        self._looked = 0.0
        super().__init__(selector)  # which watches its own pipe already

    def close(self) -> None:
        super().close()
        self._operators_sockets.close()

    def _call_soon(
        self, callback: Callable[..., object], args: Any, context: contextvars.Context | None
    ) -> events.Handle:
        if self._operators_sockets.get_map() and time.monotonic() - self._looked >= LOOK_S:
            self._look()
        operator = OPERATOR.get() if context is None else context.get(OPERATOR, False)
        if not operator:
            handle: events.Handle = super()._call_soon(callback, args, context)  # type: ignore[misc]
            return handle
        first = _First(callback, args, self, context)
        self._first(first)
        return first

    def _look(self) -> None:
        """Queue first what the operator's sockets are ready for, now, in the
        middle of a pass (on the loop's own thread only: the store's threads
        queue callbacks too)."""
        if threading.get_ident() != self._thread_id:  # type: ignore[attr-defined]
            return
        self._looked = time.monotonic()
        for key, mask in self._operators_sockets.select(0):
            try:
                reader, writer = self._selector.get_key(key.fd).data  # type: ignore[attr-defined]
            except KeyError:  # no longer watched: the pass's own look says so
                continue
            for handle, wanted in ((reader, selectors.EVENT_READ), (writer, selectors.EVENT_WRITE)):
                if mask & wanted and handle is not None and not handle._cancelled:
                    if _operators(handle):
                        self._first(handle)

    def _add_reader(self, fd: Any, callback: Callable[..., object], *args: Any) -> events.Handle:
        handle: events.Handle = super()._add_reader(fd, callback, *args)  # type: ignore[misc]
        self._mirror(fd)
        return handle

    def _remove_reader(self, fd: Any) -> bool:
        removed: bool = super()._remove_reader(fd)  # type: ignore[misc]
        self._mirror(fd)
        return removed

    def _add_writer(self, fd: Any, callback: Callable[..., object], *args: Any) -> events.Handle:
        handle: events.Handle = super()._add_writer(fd, callback, *args)  # type: ignore[misc]
        self._mirror(fd)
        return handle

    def _remove_writer(self, fd: Any) -> bool:
        removed: bool = super()._remove_writer(fd)  # type: ignore[misc]
        self._mirror(fd)
        return removed

    def _mirror(self, fd: Any) -> None:
        """`fd` in the operator's selector for what its operator's reader or
        writer waits for (out of it when neither is the operator's). Put in
        anew each time: a socket closed and its number reused is no stale entry."""
        if self.is_closed():
            return
        try:
            reader, writer = self._selector.get_key(fd).data  # type: ignore[attr-defined]
        except KeyError:
            reader = writer = None
        mask = 0
        if reader is not None and _operators(reader):
            mask |= selectors.EVENT_READ
        if writer is not None and _operators(writer):
            mask |= selectors.EVENT_WRITE
        try:
            self._operators_sockets.unregister(fd)
        except (KeyError, ValueError):
            pass
        if mask:
            self._operators_sockets.register(fd, mask)

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
            while _operators(queued := ready[at]):  # after the operator's own, in their order
                if queued is handle:  # a socket's, already queued by the other look
                    return
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


_REORDERS = (
    "_call_soon",
    "_add_callback",
    "_add_reader",
    "_remove_reader",
    "_add_writer",
    "_remove_writer",
)
"""The methods of asyncio's loop `OperatorFirst` takes over."""


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """`OperatorFirst` where asyncio's loop has the ready queue it reorders
    and the selector it looks in (CPython 3.11 to 3.14 do); else asyncio's
    own loop, which serves every request the same, only not the operator's first."""
    base = asyncio.SelectorEventLoop
    probe = base()
    try:
        reorderable = all(callable(getattr(probe, name, None)) for name in _REORDERS) and all(
            hasattr(probe, name) for name in ("_ready", "_selector", "_thread_id")
        )
    finally:
        probe.close()
    return OperatorFirst if reorderable else base
