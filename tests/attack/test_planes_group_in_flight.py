"""A group's call in flight on another plane, counted at the most it may
cost (over the group's ceiling), holds back a call of this plane's agent on a
real PostgreSQL: the agent is not held for it (the group spent nothing), is
told nothing, and its call goes once that call settles, though no plane told
this one (it asks again by itself). Before, it was told it was held until
00:00 UTC ("its group research's calls today come to $1.50 of $1.00 with
those in flight"), and only a settle on its own plane looked at it again."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from plane.clock import ManualClock
from plane.money.budgets import Budget
from plane.money.ledger import Ledger
from plane.store.postgres import PostgresDatabase
from plane.wire.protocol import Usage
from tests.support.fixtures_plane import launch, scripted_config
from tests.support.fleet_members import runs
from tests.support.scripted_llm import Reply

pytestmark = pytest.mark.timeout(120)

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
DEADLINE_S = 30.0
GROUPED = scripted_config(
    "  r1: {tools: []}\n  elsewhere: {tools: []}\n",
    limit_usd="50",
    more="groups:\n  research:\n    limitUsd: 1\n    agents: [r1, elsewhere]\n",
)


async def test_a_call_waits_for_another_planes_call_in_flight_untold_and_goes_once_it_settles(
    tmp_path: Path, scripted_llm, monkeypatch, postgres_url
) -> None:
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    plane = await launch(tmp_path / "a", scripted_llm, GROUPED)
    other = await PostgresDatabase.connect(postgres_url, migrate=False)
    try:
        await asyncio.wait_for(runs(plane, "r1"), DEADLINE_S)
        scripted_llm.default_reply = Reply("done", usage=Usage(input_tokens=60, output_tokens=10))
        elsewhere = Ledger(other, ManualClock(NOON))
        flying = await elsewhere.open_call(
            "elsewhere", "scripted", "scripted-model", Decimal("1.5"), "estimate",
            group=Budget("research", Decimal(1)),
        )  # fmt: skip
        said = await plane.send("r1", "hello")
        assert [m.kind for m in said] == ["operator"] and not said[0].held
        async with asyncio.timeout(DEADLINE_S):  # its turn began: its call waits
            while not plane.crew.workers["r1"].working:  # noqa: ASYNC110 - the worker's
                await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
        assert scripted_llm.requests == [], "sent while the call in flight may fill the group"
        await elsewhere.settle(
            flying, Usage(input_tokens=60, output_tokens=10), Decimal("0.08"), "t"
        )
        async with asyncio.timeout(DEADLINE_S):
            while await plane.services.conversation.waiting_counts():  # noqa: ASYNC110 - the store's
                await asyncio.sleep(0.02)
        rows = await plane.db.fetchall("SELECT kind, text FROM messages WHERE agent = 'r1'")
        said_to = [(kind, text) for kind, text in rows if kind in ("agent", "plane")]
        assert said_to == [("agent", "done")]
    finally:
        scripted_llm.hang_up()
        await plane.stop()
        await other.close()
