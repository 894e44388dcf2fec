"""A start that fails closes what it opened, in the reverse order, whatever
step it failed at: the runtime is built once and every part it opened or
started is closed by the plane's one exit stack."""

from __future__ import annotations

import asyncio
import socket
import threading

import pytest

from plane.errors import PlaneError
from plane.home import Home
from tests.support.fixtures_plane import launch


async def test_a_start_that_fails_at_its_last_step_leaves_no_task_thread_socket_or_lock(
    tmp_path, scripted_llm
):
    """The TCP port is taken: the store, the workers, the scheduler and the
    socket listener were all up when the plane found out."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    tasks, threads = asyncio.all_tasks(), set(threading.enumerate())
    try:
        with pytest.raises(OSError):
            await launch(tmp_path, scripted_llm, tcp=("127.0.0.1", port))
    finally:
        taken.close()
    await asyncio.sleep(0)
    left = asyncio.all_tasks() - tasks - {asyncio.current_task()}
    assert [task.get_name() for task in left] == []
    # The loop's own executor (asyncio.to_thread's) lives as long as the loop;
    # a closed connection's thread is given a moment to finish returning.
    started = [t for t in set(threading.enumerate()) - threads if not t.name.startswith("asyncio_")]
    for thread in started:
        await asyncio.to_thread(thread.join, 5)
    assert [t.name for t in started if t.is_alive()] == []
    assert not Home(tmp_path / "home").socket.exists()
    again = await launch(tmp_path, scripted_llm)  # the lock was let go, the store closed
    assert [spec.name for spec in again.services.roster] == ["demo", "scout"]
    await again.stop()


async def test_a_directory_where_the_socket_goes_is_said_in_one_sentence(
    tmp_path, scripted_llm, caplog
):
    """Not a traceback from closing the failed start: the plane does not
    remove what it did not make, says what is in the way, and lets go of
    its lock, so the next start, once it is moved, runs."""
    in_the_way = Home(tmp_path / "home").socket
    in_the_way.mkdir(parents=True)
    with pytest.raises(PlaneError) as refused:
        await launch(tmp_path, scripted_llm)
    assert str(refused.value) == (
        f"{in_the_way} is a directory, where the plane's socket goes: "
        "move it away, then start the plane again."
    )
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
    assert in_the_way.is_dir()
    in_the_way.rmdir()
    again = await launch(tmp_path, scripted_llm)
    assert again.home.socket.is_socket()
    await again.stop()
