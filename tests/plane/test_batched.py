"""Reads asked for together are made once; none returns what the table held
before it was asked for; one asker's cancellation or the read's failure
reaches exactly who it should."""

from __future__ import annotations

import asyncio

import pytest

from plane.batched import FEW, Batched, Shared, agents_in


class Table:
    """A table read by key, counting its reads; `gate` holds a read open."""

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}
        self.reads: list[list[str]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.fail: Exception | None = None
        self.started = asyncio.Event()

    async def read(self, keys: list[str]) -> dict[str, int]:
        self.reads.append(sorted(keys))
        taken = {k: self.rows[k] for k in keys if k in self.rows}
        self.started.set()
        await self.gate.wait()
        if self.fail is not None:
            raise self.fail
        return taken


async def test_asks_of_one_moment_are_one_read():
    table = Table()
    table.rows = {"a": 1, "b": 2}
    batched = Batched(table.read, missing=0)
    got = await asyncio.gather(*(batched.get(k) for k in ["a", "b", "c", "a"]))
    assert got == [1, 2, 0, 1]
    assert table.reads == [["a", "b", "c"]]


async def test_an_ask_after_a_read_started_waits_for_the_next_read():
    table = Table()
    table.rows = {"a": 1}
    batched = Batched(table.read, missing=0)
    table.gate.clear()
    first = asyncio.ensure_future(batched.get("a"))
    await table.started.wait()  # the read has begun, with a = 1
    table.rows["a"] = 2  # a commit
    second = asyncio.ensure_future(batched.get("a"))
    table.gate.set()
    assert await first == 1
    assert await second == 2  # not the read that began before it asked
    assert len(table.reads) == 2


async def test_a_cancelled_asker_leaves_the_others_their_answer():
    table = Table()
    table.rows = {"a": 1}
    batched = Batched(table.read, missing=0)
    table.gate.clear()
    gone = asyncio.ensure_future(batched.get("a"))
    kept = asyncio.ensure_future(batched.get("a"))
    await asyncio.sleep(0)
    gone.cancel()
    table.gate.set()
    assert await kept == 1
    with pytest.raises(asyncio.CancelledError):
        await gone


async def test_a_failed_read_fails_every_asker_of_its_moment():
    table = Table()
    table.fail = RuntimeError("the store went away")
    batched = Batched(table.read, missing=0)
    got = await asyncio.gather(batched.get("a"), batched.get("b"), return_exceptions=True)
    assert [str(e) for e in got] == ["the store went away"] * 2
    table.fail = None
    assert await batched.get("a") == 0  # the next moment reads again


async def test_a_shared_read_is_made_once_for_who_asks_while_it_runs():
    reads = 0
    gate = asyncio.Event()

    async def read() -> int:
        nonlocal reads
        reads += 1
        await gate.wait()
        return reads

    shared = Shared(read)
    waiting = [asyncio.ensure_future(shared.get()) for _ in range(50)]
    await asyncio.sleep(0)
    gate.set()
    assert await asyncio.gather(*waiting) == [1] * 50
    assert await shared.get() == 2  # done: the next ask reads again


def test_many_agents_read_the_whole_table_in_one_statement():
    assert agents_in(["b", "a"]) == ("agent IN (?,?)", ["a", "b"])
    assert agents_in([str(n) for n in range(FEW + 1)]) == ("TRUE", [])
