"""Planes of a fleet in one test process, each its own connection to a real
PostgreSQL and its own parts: the test keeps each part it made, and asks
each the way the plane does (a `Fleet` keeps its parts to itself)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from plane.agents.guard_book import GuardBook
from plane.agents.services import Ownership
from plane.clock import ManualClock
from plane.daemon.fleet import (
    DatabaseClock,
    Fleet,
    lease_margin_ms,
    tell_ceilings,
    tell_owner,
)
from plane.history.conversation import Conversation
from plane.money.ceilings import Ceilings
from plane.money.ledger import Ledger
from plane.store.postgres import PostgresDatabase
from tests.support.fixtures_plane import RunningPlane, launch
from tests.support.scripted_llm import ScriptedLLM

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Member:
    """One plane of the fleet: its fleet (the ticks) and the parts it was given."""

    fleet: Fleet
    db: PostgresDatabase
    ledger: Ledger
    conversation: Conversation
    ownership: Ownership
    guards: GuardBook
    ceilings: Ceilings


async def join(
    url: str,
    name: str,
    agents: list[str],
    *,
    shared: bool = False,
    clock: DatabaseClock | None = None,
    work: Callable[[Mapping[str, int]], Awaitable[Collection[str]]] | None = None,
) -> Member:
    """A plane named `name` running `agents`, on the store at `url`; `shared`:
    its conversations are the fleet's (as with several planes on one store);
    `work`: which agents have something to do (`Fleet(work=…)`; None: every
    agent it holds is woken at each renewal)."""
    db = await PostgresDatabase.connect(url)
    manual = ManualClock(NOON)
    ledger = Ledger(db, manual, plane=name, lease_margin_ms=lease_margin_ms())
    ceilings = Ceilings(db, manual, tell=partial(tell_ceilings, db, name))
    await ceilings.load({})
    conversation = Conversation(db, manual, shared=shared)
    ownership = Ownership(name, notify=partial(tell_owner, db))
    guards = GuardBook(db, shared=True)
    fleet = Fleet(
        db,
        lambda: agents,
        ledger,
        ceilings,
        conversation,
        ownership,
        clock,
        guards=guards,
        work=work,
    )
    return Member(fleet, db, ledger, conversation, ownership, guards, ceilings)


def serve(home: Path, config: Path, url: str, name: str, lease_s: float) -> subprocess.Popen[bytes]:
    """`plane serve` as a fleet's member named `name`, in a process of its
    own, its log beside its home."""
    env = {
        **os.environ,
        "PLANE_HOME": str(home),
        "PLANE_STORE": url,
        "PLANE_NAME": name,
        "PLANE_LEASE_S": str(lease_s),
    }
    with open(home.parent / f"{name}.log", "wb") as log:  # the child has its own copy
        return subprocess.Popen(
            [sys.executable, "-m", "plane", "serve", "--config", str(config)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )


async def runs(plane: RunningPlane, agent: str) -> None:
    """Until `plane` holds `agent`'s lease."""
    while agent not in (plane.services.ownership.mine or ()):  # noqa: ASYNC110 - the ticks move it
        await asyncio.sleep(0.05)


async def a_then_b(
    root: Path, llm: ScriptedLLM, config: str, within: float, clock: ManualClock | None = None
) -> tuple[RunningPlane, RunningPlane]:
    """Planes A and B on the store `PLANE_STORE` names, A started first and
    running `demo` (within `within` seconds) before B starts."""
    a = await launch(root / "a", llm, config, clock)
    try:
        await asyncio.wait_for(runs(a, "demo"), within)
        b = await launch(root / "b", llm, config, clock)
    except BaseException:
        await a.stop()
        raise
    return a, b


@contextlib.asynccontextmanager
async def a_and_b(
    root: Path, llm: ScriptedLLM, config: str, within: float
) -> AsyncIterator[tuple[RunningPlane, RunningPlane]]:
    """`a_then_b`, both planes stopped once done (the scripted model's
    streams hung up first, so no turn waits on one)."""
    a, b = await a_then_b(root, llm, config, within)
    try:
        yield a, b
    finally:
        llm.hang_up()
        await b.stop()
        await a.stop()
