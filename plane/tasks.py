"""Ending a task from the one that owns it, without losing the owner's own stop.

Awaiting a cancelled task under `suppress(CancelledError)` swallows more than
the task's cancellation: if the owner is itself cancelled while it waits (a
plane stopping, a turn cut), that cancellation raises at the same `await` and
is swallowed too, so the owner goes on as if nobody had asked it to stop, and
whatever waits for it to end waits forever. `asyncio.wait` waits for a task
to end without raising what ended it, so only the owner's own cancellation
raises there.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def settled(task: asyncio.Future[Any]) -> BaseException | None:
    """Until `task` has ended, however it ends: what it raised (None when it
    returned or was cancelled), retrieved, so never logged as unretrieved."""
    await asyncio.wait([task])
    return None if task.cancelled() else task.exception()


async def cancel(task: asyncio.Future[Any]) -> None:
    """Cancel `task` and wait until it has ended; an error it ended with
    (other than its cancellation) is raised here, as awaiting it would."""
    task.cancel()
    if (error := await settled(task)) is not None:
        raise error
