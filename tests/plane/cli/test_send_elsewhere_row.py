"""`plane send --wait` through a plane of a fleet that does not run the
agent, its turn ending while that plane's renewal tells what the others
wrote: the renewal has read the lines (the turn's tool line among them,
not its answer), the turn's end commits, and only then is the agent's row
shown again. The row says nothing waits only once the answer and the cost
line are told: the command prints them and exits 0. Before, the row read
what waited after the turn's end had committed: it said nothing waited
while the answer was not told yet, and the command ended at the tool line
and exited 1, a turn that went through reported failed. A row shown there
between renewals (the agent's ceiling set on the plane that runs it, a row
shown again for a reason of its own) says its message waits too, until the
renewal that tells the answer. A turn that fails unbilled, its notice told
by a renewal before its end (no line of its own) committed, has its row
shown again at the next renewal all the same, nothing waiting."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest

from plane.daemon import fleet
from plane.wire import protocol as p
from tests.support.command import Ran, plane_cli_async
from tests.support.fixtures_plane import RunningPlane, scripted_config
from tests.support.fleet_members import a_and_b
from tests.support.looping import CENT
from tests.support.rows_shown import row_shown
from tests.support.scripted_llm import ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

LEASE_S = 3.0
CONFIG = scripted_config("  demo: {}\n", limit_usd="5")

LINES_READ = "SELECT * FROM messages WHERE id > ?"
"""How a renewal reads the lines the other planes wrote."""

ANSWERED = "SELECT EXISTS (SELECT 1 FROM messages WHERE agent = 'demo' AND kind = 'cost')"
"""The turn's end (its answer and its cost line) committed."""
NOTHING_WAITS = "SELECT NOT EXISTS (SELECT 1 FROM messages WHERE agent = 'demo' AND waiting = 1)"
"""The turn's end (its question answered) committed."""
QUESTION = "SELECT id FROM messages WHERE agent = 'demo' AND waiting = 1 FOR UPDATE"
"""The question sent, its row locked: the turn's end waits to mark it answered."""


class LinesHeld:
    """`plane`'s store: the first read of the lines the other planes wrote
    that holds one of `agent`'s from the plane that runs it, held once it
    has read, until `go_on` is set."""

    def __init__(self, plane: RunningPlane, agent: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.agent = agent
        self.read = plane.db.fetchall
        self.held = asyncio.Event()
        self.go_on = asyncio.Event()
        monkeypatch.setattr(plane.db, "fetchall", self.fetchall)

    async def fetchall(self, sql: str, *params: object) -> list[Any]:
        rows = await self.read(sql, *params)
        if not sql.startswith(LINES_READ) or self.held.is_set():
            return rows
        if any(row["agent"] == self.agent and row["kind"] != "operator" for row in rows):
            self.held.set()
            await self.go_on.wait()
        return rows


async def store_says(url: str, sql: str) -> None:
    """Until `sql` reads true."""
    with psycopg.connect(url, autocommit=True) as watcher:
        async with asyncio.timeout(10 * LEASE_S):
            while watcher.execute(sql).fetchone() != (True,):  # noqa: ASYNC110 - the store
                await asyncio.sleep(0.02)


Meanwhile = Callable[[RunningPlane, RunningPlane], Awaitable[p.AgentState | None]]
"""What happens on the planes (a, b) once the turn's end committed, before
b's renewal goes on: the row of demo it shows, if it shows one."""


async def sent_as_it_renews(
    tmp_path: Path,
    llm: ScriptedLLM,
    url: str,
    monkeypatch: pytest.MonkeyPatch,
    meanwhile: Meanwhile,
) -> tuple[Ran, p.AgentState | None]:
    """`send --wait` to demo through b, the plane that does not run it: its
    turn (a tool call, then the answer) ends while b's renewal holds the
    lines it read (the tool line, not the answer), and `meanwhile` then."""
    monkeypatch.setenv("PLANE_STORE", url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    async with a_and_b(tmp_path, llm, CONFIG, 10 * LEASE_S) as (a, b):
        ends = threading.Event()
        llm.reply("", tool_calls=[("list_files", {})], usage=CENT)
        llm.reply("Listed.", usage=CENT, until=ends)
        lines = LinesHeld(b, "demo", monkeypatch)
        sending = asyncio.create_task(
            plane_cli_async(
                b.home.root, "send", "demo", "list", "--wait", "--timeout", str(6 * LEASE_S)
            )
        )
        try:
            async with asyncio.timeout(10 * LEASE_S):
                await lines.held.wait()  # the tool line read, the answer not written
            ends.set()
            await store_says(url, ANSWERED)
            shown = await meanwhile(a, b)
        finally:
            ends.set()
            lines.go_on.set()
        return await sending, shown


def printed_the_answer(sent: Ran) -> None:
    """The command ends with the answer and the turn's cost line, exit 0."""
    assert (sent.returncode, sent.stderr) == (0, ""), sent.stdout
    *_, answer, cost = sent.stdout.splitlines()
    assert answer == "Listed.", sent.stdout
    assert cost.startswith("  $0.02 · "), sent.stdout


async def nothing(a: RunningPlane, b: RunningPlane) -> None:
    return None


async def test_send_wait_through_another_plane_whose_turn_ends_as_it_renews_prints_the_answer(
    tmp_path, scripted_llm, postgres_url, monkeypatch
):
    sent, _ = await sent_as_it_renews(tmp_path, scripted_llm, postgres_url, monkeypatch, nothing)
    printed_the_answer(sent)


async def ceiling_set_on_a(a: RunningPlane, b: RunningPlane) -> p.AgentState:
    """demo's ceiling set on a: b reads the ceilings again at a's notice and
    shows demo's row again, before its renewal has told the answer."""
    subscription = b.bus.subscribe()
    try:
        await a.services.gate.ceilings.set("demo", Decimal("6"))
        return await row_shown(subscription, "demo", lambda row: row.limit_usd == Decimal("6"))
    finally:
        b.bus.unsubscribe(subscription)


async def shown_again_on_b(a: RunningPlane, b: RunningPlane) -> p.AgentState:
    """demo's row shown again on b for a reason of its own (its forecast
    moved, an approval), before its renewal has told the answer."""
    state: p.AgentState = await b.rows.publish("demo")
    return state


@pytest.mark.parametrize("meanwhile", [ceiling_set_on_a, shown_again_on_b])
async def test_a_row_shown_between_renewals_says_waiting_until_the_answer_is_told(
    tmp_path, scripted_llm, postgres_url, monkeypatch, meanwhile
):
    """The plane that does not run the agent shows its row again between
    renewals (its ceiling set elsewhere, or a row of its own shown again):
    the row still says its message waits, its answer not told yet, and the
    command ends with the answer. Before, the row said nothing waited: the
    command ended at the tool line and exited 1."""
    sent, shown = await sent_as_it_renews(
        tmp_path, scripted_llm, postgres_url, monkeypatch, meanwhile
    )
    assert shown is not None and shown.waiting == 1
    printed_the_answer(sent)


async def question_locked(holding: psycopg.Connection[Any]) -> None:
    """Until demo's question is stored, its row then locked by `holding`."""
    async with asyncio.timeout(10 * LEASE_S):
        while not holding.execute(QUESTION).fetchall():  # noqa: ASYNC110 - the store
            await asyncio.sleep(0.02)


async def test_send_wait_through_another_plane_to_a_turn_failing_as_it_renews_exits_1(
    tmp_path, scripted_llm, postgres_url, monkeypatch
):
    """The provider answers with an error, no call paid: the turn writes its
    notice, then its end marks the question answered with no line of its
    own. b's renewal reads what waits (the question) and the lines (the
    notice), and the end commits only then: the next renewal has no line of
    demo's to tell, and shows its row again all the same, nothing waiting
    now. The command ends with the notice and exits 1. Before, the row went
    on saying the question waited, and the command waited out its timeout
    (exit 124)."""
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    async with a_and_b(tmp_path, scripted_llm, CONFIG, 10 * LEASE_S) as (_, b):
        asked = threading.Event()
        scripted_llm.fault(503, until=asked)
        lines = LinesHeld(b, "demo", monkeypatch)
        sending = asyncio.create_task(
            plane_cli_async(
                b.home.root, "send", "demo", "hi", "--wait", "--timeout", str(6 * LEASE_S)
            )
        )
        try:
            with psycopg.connect(postgres_url) as holding:
                try:
                    await question_locked(holding)
                    asked.set()
                    async with asyncio.timeout(10 * LEASE_S):
                        await lines.held.wait()  # the notice read, the end not committed
                finally:
                    asked.set()
                    holding.rollback()
            await store_says(postgres_url, NOTHING_WAITS)
        finally:
            lines.go_on.set()
        sent = await sending
    assert (sent.returncode, sent.stderr) == (1, ""), sent.stdout
    [notice] = sent.stdout.splitlines()
    assert notice.startswith("The turn stopped: "), sent.stdout
