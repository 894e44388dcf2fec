"""Ending a task never swallows the cancellation of the one ending it."""

from __future__ import annotations

import asyncio

import pytest

from plane.tasks import cancel, settled


async def _slow_to_stop(stopped: asyncio.Event) -> None:
    """A task whose cancellation takes a few loop turns (it cleans up)."""
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        await asyncio.sleep(0.05)
        stopped.set()
        raise


async def test_the_owner_cancelled_while_it_waits_is_cancelled_and_the_task_still_ends() -> None:
    stopped = asyncio.Event()
    task = asyncio.create_task(_slow_to_stop(stopped))
    await asyncio.sleep(0)
    owner = asyncio.create_task(cancel(task))
    await asyncio.sleep(0.01)  # the owner waits for the task's clean-up
    owner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await owner
    await asyncio.wait_for(stopped.wait(), 5)
    assert task.cancelled()


async def test_cancel_returns_once_the_task_has_ended_and_raises_what_else_it_raised() -> None:
    stopped = asyncio.Event()
    task = asyncio.create_task(_slow_to_stop(stopped))
    await asyncio.sleep(0)
    await cancel(task)
    assert stopped.is_set() and task.cancelled()

    async def fails_as_it_stops() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise OSError("the socket was already gone") from None

    failing = asyncio.create_task(fails_as_it_stops())
    await asyncio.sleep(0)
    with pytest.raises(OSError, match="already gone"):
        await cancel(failing)
    with pytest.raises(OSError, match="already gone"):  # ended already: the same, at once
        await cancel(failing)


async def test_cancel_of_a_task_that_already_returned_is_nothing() -> None:
    task = asyncio.create_task(asyncio.sleep(0, result=7))
    await task
    await cancel(task)
    assert task.result() == 7


async def test_settled_hands_back_what_the_task_raised_and_never_raises_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def fails() -> None:
        raise ValueError("bad answer")

    task = asyncio.create_task(fails())
    error = await settled(task)
    assert isinstance(error, ValueError)
    cancelled = asyncio.create_task(asyncio.sleep(3600))
    cancelled.cancel()
    assert await settled(cancelled) is None
    del task
    assert "never retrieved" not in caplog.text
