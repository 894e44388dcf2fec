"""Rows no plane writes, read back at start or on a turn's way: a store edited
by hand, or written by a buggy older tool. Bad input gets one clear error and
changes nothing; no traceback reaches a user; nothing is lost.

Two answers, by what the row is:

- money (a ceiling of any kind, a call's cost): the plane does not start, and
  says in one line which row of which table, and what to do. An unreadable
  ceiling must never mean no ceiling, nor a cost nothing.
- the rest (what people read, what the model reads, a pace, a setting): the
  plane starts, that row alone is left aside with one line in plane.log
  naming its table and row, and every other agent carries on. The row stays
  in the store as it was.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from plane.agents import notices
from plane.errors import LedgerError, StoreError
from plane.home import Home
from plane.money.ledger import Budget
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.approving import HTTP, get, held_links, held_plane, post, standing
from tests.support.command import plane_cli
from tests.support.fixtures_gateway import CONFIG as GATEWAY_CONFIG
from tests.support.fixtures_plane import CONFIG, NOON, scripted_config
from tests.support.fixtures_postgres import open_db
from tests.support.local_http import local_client
from tests.support.migrated import lay_store
from tests.support.scripted_llm import Reply
from tests.support.sdks import ON_ONE_WORKER, anthropic, anthropic_sdk

if TYPE_CHECKING:
    from anthropic.types import MessageParam

DAY = NOON.date().isoformat()
AT = NOON.isoformat()
GROUPED = scripted_config(
    "  demo: {}\n  scout: {}\n", more="groups:\n  g: {limitUsd: 1, agents: [demo]}\n"
)
CALL = (
    "INSERT INTO calls (id, agent, day, at, provider, model, cost_usd, price_source, status)"
    " VALUES (7, 'demo', ?, ?, 'scripted', 'scripted-model', ?, 'table', ?)"
)
CALL_8 = CALL.replace("(7,", "(8,")
"""Another call, whose cost keeps a sum with call 7's at or above zero."""
MESSAGE = "INSERT INTO messages (id, agent, at, kind, text, waiting, cost_usd, usage)"
GUARD_HISTORY = "INSERT INTO guard_history (agent, history, at) VALUES ('demo', ?, ?)"

_ENGINES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)]


def on_each_store(test: Callable[..., Any]) -> Callable[..., Any]:
    """Each engine can hold these rows (their columns are TEXT on both): the
    case runs on each, PostgreSQL's in the slow tier."""
    on_each = pytest.mark.parametrize("each_store", _ENGINES, indirect=True)
    return pytest.mark.usefixtures("each_store")(on_each(test))


@dataclass(frozen=True)
class Odd:
    sql: str
    params: tuple[object, ...]
    says: tuple[str, ...]
    """What the one line (the refusal, or the log's) names: its table and row."""
    config: str = CONFIG


REFUSED = {
    "ceilings limit_usd not an amount": Odd(
        "INSERT INTO ceilings (agent, limit_usd, set_at, set_by) VALUES ('demo', 'abc', ?, 'x')",
        (AT,),
        ("ceilings", "demo", "'abc'"),
    ),
    "ceilings limit_usd Infinity": Odd(
        "INSERT INTO ceilings (agent, limit_usd, set_at, set_by)"
        " VALUES ('demo', 'Infinity', ?, 'x')",
        (AT,),
        ("ceilings", "demo", "'Infinity'"),
    ),
    "asks limit_usd not an amount": Odd(
        "INSERT INTO asks (agent, limit_usd, asked_at) VALUES ('demo', 'abc', ?)",
        (AT,),
        ("asks", "demo", "'abc'"),
    ),
    "raises limit_usd not an amount": Odd(
        "INSERT INTO raises (agent, limit_usd, ends_at, set_at) VALUES ('demo', 'abc', ?, ?)",
        ("2026-11-30T00:00:00+00:00", AT),
        ("raises", "demo", "'abc'"),
    ),
    "raises ends_at not a time": Odd(
        "INSERT INTO raises (agent, limit_usd, ends_at, set_at) VALUES ('demo', '2', 'soon', ?)",
        (AT,),
        ("raises", "demo", "'soon'"),
    ),
    "fleet limit_usd not an amount": Odd(
        "UPDATE fleet SET limit_usd = 'abc', set_at = ?, set_by = 'operator'",
        (AT,),
        ("fleet", "'abc'"),
    ),
    "group_limits limit_usd not an amount": Odd(
        "INSERT INTO group_limits (name, limit_usd, set_at, set_by) VALUES ('g', 'abc', ?, 'x')",
        (AT,),
        ("group_limits", "g", "'abc'"),
        GROUPED,
    ),
    "spend cost_usd not an amount": Odd(
        "INSERT INTO spend (day, agent, cost_usd) VALUES (?, 'demo', 'abc')",
        (DAY,),
        ("spend", "demo on " + DAY, "'abc'"),
    ),
    "spend day not a day": Odd(
        "INSERT INTO spend (day, agent, cost_usd) VALUES ('yesterday', 'demo', '0.1')",
        (),
        ("spend", "demo", "'yesterday'"),
    ),
    "group_spend cost_usd not an amount": Odd(
        "INSERT INTO group_spend (day, agent_group, cost_usd) VALUES (?, 'g', 'abc')",
        (DAY,),
        ("group_spend", "g on " + DAY, "'abc'"),
        GROUPED,
    ),
    "tag_spend cost_usd not an amount": Odd(
        "INSERT INTO tag_spend (day, tag, cost_usd) VALUES (?, 't', 'abc')",
        (DAY,),
        ("tag_spend", "t on " + DAY, "'abc'"),
    ),
    "plane_day day not a day": Odd(
        "INSERT INTO plane_day (id, day) VALUES (1, 'yesterday')"
        " ON CONFLICT (id) DO UPDATE SET day = excluded.day",
        (),
        ("plane_day", "'yesterday'"),
    ),
    "calls day not a day": Odd(
        CALL,
        ("someday", AT, "0.1", "settled"),
        ("calls", "call 7 of demo", "'someday'"),
    ),
    "calls in flight cost_usd not an amount": Odd(
        CALL, (DAY, AT, "abc", "pending"), ("calls", "call 7 of demo", "'abc'")
    ),
}

LEFT_ASIDE = {
    "messages at not a time": Odd(
        MESSAGE + " VALUES (900, 'demo', 'yesterday', 'operator', 'hi', 0, NULL, NULL)",
        (),
        ("messages row 900", "demo"),
    ),
    "messages waiting, at not a time": Odd(
        MESSAGE + " VALUES (900, 'demo', 'yesterday', 'operator', 'hi', 1, NULL, NULL)",
        (),
        ("messages row 900", "demo"),
    ),
    "messages cost_usd not an amount": Odd(
        MESSAGE + " VALUES (900, 'demo', ?, 'cost', '$x', 0, 'abc', NULL)",
        (AT,),
        ("messages row 900", "demo"),
    ),
    "messages usage not JSON": Odd(
        MESSAGE + " VALUES (900, 'demo', ?, 'cost', '$x', 0, '0.1', '{not json')",
        (AT,),
        ("messages row 900", "demo"),
    ),
    "messages kind no plane writes": Odd(
        MESSAGE + " VALUES (900, 'demo', ?, 'weird', 'hi', 0, NULL, NULL)",
        (AT,),
        ("messages row 900", "demo"),
    ),
    "context tool_calls not JSON": Odd(
        "INSERT INTO context (id, agent, role, content, tool_calls)"
        " VALUES (900, 'demo', 'assistant', 'x', '{not json')",
        (),
        ("context row 900", "demo"),
    ),
    "calls at not a time (the pace)": Odd(
        CALL, (DAY, "yesterday", "0.01", "settled"), ("calls of demo", "'yesterday'")
    ),
    "calls cost_usd too large for the pace": Odd(
        CALL, (DAY, AT, "1e999", "settled"), ("calls row 7 of demo", "'1e999'")
    ),
    "agents tools not JSON": Odd(
        "INSERT INTO agents (name, model, provider, role, created_at, tools)"
        " VALUES ('made', 'scripted-model', 'scripted', 'r', ?, '{bad')",
        (AT,),
        ("agents row made", "left aside"),
    ),
    "agent_settings tools not JSON": Odd(
        "INSERT INTO agent_settings (name, tools, set_at) VALUES ('demo', '{bad', ?)",
        (AT,),
        ("agent_settings row demo", "tools"),
    ),
    "guard_history history not JSON": Odd(
        GUARD_HISTORY, ("{bad", AT), ("guard_history row demo", "left aside")
    ),
    "guard_history a digest that is none": Odd(
        GUARD_HISTORY,
        (
            '{"index":1,"steps":[],"tools":[["zz","read_file",0]],"streaks":[[null,0,0],'
            '[null,0,0],[null,0,0]],"known":"","workspace":null}',
            AT,
        ),
        ("guard_history row demo", "'zz' is not a digest"),
    ),
    "guard_history at not a time": Odd(
        GUARD_HISTORY,
        (
            '{"index":0,"steps":[],"tools":[],"streaks":[[null,0,0],[null,0,0],[null,0,0]],'
            '"known":"","workspace":null}',
            "tomorrow",
        ),
        ("guard_history row demo", "'tomorrow'"),
    ),
}


def _said(caplog: pytest.LogCaptureFixture, needles: tuple[str, ...]) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.ERROR and all(n in r.getMessage() for n in needles)
    ]


@on_each_store
@pytest.mark.parametrize("case", list(REFUSED))
async def test_an_unreadable_row_of_money_stops_the_start_with_one_line(start_plane, case):
    """A ceiling (the agent's, its ask, a raise, the fleet's, a group's), an
    open call's cost, a recent day's spend (an agent's, a group's, a tag's)
    or the plane's day (which says whose spend binds) that cannot be read:
    reading it as "no ceiling" or $0 would let an agent spend past what the
    operator set, and skipping the row would lose money the ledger must
    count. So the plane refuses to start, naming the row and what to do, in
    one line (the CLI prints a `PlaneError` as it is). Before, a decimal or
    ISO-format error escaped the start; a ceiling of Infinity ran the agent
    with no ceiling at all; and a day's spend or the plane's day, read only at
    the day's first gate check, let the plane start and then failed every
    agent's every turn with no word to the operator; on PostgreSQL, whose
    start sweeps no calls, the days and their sums were not looked at at all."""
    odd = REFUSED[case]
    plane = await start_plane(odd.config)
    await plane.db.write(lambda conn: conn.execute(odd.sql, odd.params))
    with pytest.raises(StoreError) as refused:
        await start_plane(restart=plane)
    said = str(refused.value)
    assert "\n" not in said, said
    assert all(needle in said for needle in odd.says), said
    assert "correct or delete that row" in said


@on_each_store
@pytest.mark.parametrize("case", list(LEFT_ASIDE))
async def test_an_unreadable_row_elsewhere_is_left_aside_and_said_once(start_plane, case, caplog):
    """What people or the model read, an agent's pace, a setting: the plane
    starts, that row alone is left aside (it stays in the store) with one
    line in the log naming it, and the agents' turns and conversations go
    on. Before, such a row failed the start (an agent's tools), every turn of
    its agent (its context), or every read of its conversation (a message);
    a call's cost too large for a float made its agent's pace infinite, and
    every showing of the agents failed (on PostgreSQL, the start did)."""
    odd = LEFT_ASIDE[case]
    plane = await start_plane(odd.config)
    await plane.db.write(lambda conn: conn.execute(odd.sql, odd.params))
    with caplog.at_level(logging.ERROR):
        plane = await start_plane(restart=plane)
        assert {a.name for a in (await plane.rows.snapshot()).agents} == {"demo", "scout"}
        for agent in ("demo", "scout"):
            said = await plane.turn(agent, "hello", within=10)
            assert any(m.kind == "agent" for m in said), (agent, said)
            history = await plane.runtime.api.handle(p.History(agent=agent))
            assert isinstance(history, p.HistoryReply)
            assert [m.text for m in history.messages if m.kind == "operator"][-1] == "hello"
    # On a store planes share, a loop guard's history is read as its agent's
    # lease is taken: said once all the same.
    assert len(_said(caplog, odd.says)) == 1, [r.getMessage() for r in caplog.records]


@pytest.mark.usefixtures("each_store")
async def test_an_unreadable_waiting_message_is_not_counted_nor_answered(start_plane, caplog):
    """A message left waiting whose row no plane wrote: no turn can read it,
    so it is not counted either. Its agent shows nothing waiting (its row,
    the snapshot), takes no turn on nothing, answers what the operator sends
    next once, and the row stays in the store as it was, said once in the
    log. Before, the agent showed "1 waiting" for ever, before and after
    its turns."""
    plane = await start_plane()
    await plane.db.write(lambda conn: conn.execute(LEFT_ASIDE[_WAITING].sql))
    with caplog.at_level(logging.ERROR):
        plane = await start_plane(restart=plane)
        await plane.quiet()
        assert await _waiting(plane) == {"demo": 0, "scout": 0}
        assert plane.llm.requests == []
        said = await plane.turn("demo", "hello", within=10)
        await plane.quiet()
    assert [m.text for m in said if m.kind == "agent"] == ["ok"], said
    assert len(plane.llm.requests) == 1
    assert await _waiting(plane) == {"demo": 0, "scout": 0}
    row = await plane.db.fetchone("SELECT at, text, waiting FROM messages WHERE id = 900")
    assert row is not None and tuple(row) == ("yesterday", "hi", 1)
    assert len(_said(caplog, ("messages row 900", "demo"))) == 1


_WAITING = "messages waiting, at not a time"


async def _waiting(plane) -> dict[str, int]:
    """Each agent's waiting count, as the snapshot and its own row say it
    (the two are read apart: the row's alone, the snapshot's for all)."""
    snapshot = await plane.rows.snapshot()
    counts = {a.name: a.waiting for a in snapshot.agents}
    for agent in counts:
        assert (await plane.rows.state(agent)).waiting == counts[agent], agent
    return counts


def unreadable_loop_hold(agent: str, conn: sqlite3.Connection) -> None:
    """`agent`'s loop guard hold, written as JSON no plane writes."""
    conn.execute(
        "INSERT INTO agent_settings (name, loop, set_at) VALUES (?, '{bad', ?)", (agent, AT)
    )


@on_each_store
async def test_an_unreadable_loop_hold_keeps_the_agent_paused(start_plane, caplog):
    """The loop guard's hold, kept as JSON, unreadable: taking it for no hold
    would let an agent the guard stopped for spending in a loop run again
    unseen. It stays paused (the operator resumes it), said once in the log;
    the others run. Before, the plane did not start."""
    plane = await start_plane()
    await plane.db.write(partial(unreadable_loop_hold, "demo"))
    with caplog.at_level(logging.ERROR):
        plane = await start_plane(restart=plane)
        said = await plane.turn("scout", "hello", within=10)
    assert any(m.kind == "agent" for m in said)
    snapshot = await plane.rows.snapshot()
    assert {a.name: a.paused for a in snapshot.agents}["demo"] is True
    assert len(_said(caplog, ("agent_settings row demo", "paused"))) == 1


async def test_an_unreadable_loop_hold_keeps_a_gateway_agent_refused(start_gateway, caplog):
    """The same for a gateway agent, whose client may call at any time: kept
    paused, its calls are refused with what a paused agent says, and nothing
    is sent upstream or charged. Before, its row said paused while its
    client's calls were forwarded and charged."""
    gw = await start_gateway()
    await gw.db.write(partial(unreadable_loop_hold, "aider"))
    with caplog.at_level(logging.ERROR):
        gw = await start_gateway(restart=gw)
    path, heads = gw.calls_as("aider")
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    async with local_client(base_url=gw.url, timeout=20) as http:
        answer = await http.post(path, json=body, headers=heads)
    assert answer.status_code != 200, answer.text
    assert notices.paused_by_operator("aider") in answer.text
    assert gw.llm.received == [], "the call was sent upstream"
    assert await gw.entries() == []
    # The operator resumes it (as a paused agent; a gateway agent is never
    # paused otherwise): its calls go through, after a restart too.
    reply = await gw.runtime.api.handle(p.PauseAgent(agent="aider", paused=False))
    assert isinstance(reply, p.AgentReply) and not reply.agent.paused
    gw = await start_gateway(restart=gw)
    path, heads = gw.calls_as("aider")  # its key made again
    async with local_client(base_url=gw.url, timeout=20) as http:
        answer = await http.post(path, json=body, headers=heads)
    assert answer.status_code == 200, answer.text


ROOMY = scripted_config("  demo: {}\n  scout: {}\n", limit_usd="100")
"""Ceilings no test turn reaches ($1.72 a turn)."""
SPEND = "UPDATE spend SET cost_usd = ? WHERE agent = 'demo'"


@pytest.mark.usefixtures("each_store")
async def test_a_days_spend_edited_while_the_plane_runs_holds_its_agent(start_plane):
    """The agent's spend row of today, edited while the plane runs to what is
    not an amount: the start never saw it. The close of the call that finds
    it (the call was made) stops the turn, and so does every turn after it,
    before its first call, until the row reads again: saying the sentence
    the start would say of that row, no money is spent that could not be
    recorded. The other agents carry on. Before, the turn stopped on "Spend
    could not be recorded in the ledger (user-defined function raised
    exception)", and every later turn made its call all the same, leaving
    each one pending."""
    plane = await start_plane(ROOMY)
    await plane.turn("demo", "hello")  # today's row written, its sum known to the plane
    await plane.db.write(lambda conn: conn.execute(SPEND, ("abc",)))
    stopped = [await plane.turn("demo", text, within=10) for text in ("again", "and again")]
    assert len(plane.llm.requests) == 2  # the first turn's, and the call that found the row
    scout = await plane.turn("scout", "hello", within=10)
    assert any(m.kind == "agent" for m in scout), scout
    await plane.db.write(lambda conn: conn.execute(SPEND, ("1.721",)))
    resumed = await plane.turn("demo", "once more", within=10)
    assert [m.text for m in resumed if m.kind == "agent"] == ["ok"], resumed
    await plane.db.write(lambda conn: conn.execute(SPEND, ("abc",)))
    with pytest.raises(StoreError) as refused:
        await start_plane(restart=plane)
    told = notices.unrecorded(refused.value)
    for said in stopped:
        assert [m.text for m in said if m.kind in ("plane", "agent")] == [told], said


@on_each_store
async def test_a_days_spend_unreadable_when_its_day_begins_refuses_with_one_line(start_plane):
    """A spend row of a day not yet begun, no plane's: the start looks at
    days begun, and the day's sums are read at its first gate check. The
    operator's send is refused in one line naming the row (as the start
    would, since that day's every sum is the gate's) and nothing is spent.
    Before, the send failed on a bare decimal error."""
    plane = await start_plane(ROOMY)
    await plane.db.write(
        lambda conn: conn.execute(
            "INSERT INTO spend (day, agent, cost_usd) VALUES ('2026-11-30', 'demo', 'abc')"
        )
    )
    await plane.clock.set(NOON + timedelta(hours=12, seconds=30))
    with pytest.raises(LedgerError) as refused:
        await plane.send("demo", "hello")
    said = str(refused.value)
    assert "\n" not in said, said
    assert all(n in said for n in ("spend", "demo on 2026-11-30", "'abc'", "correct or delete"))
    assert plane.llm.requests == []


REPORTED = {
    "calls cost_usd not an amount": Odd(
        CALL, (DAY, AT, "abc", "settled"), ("calls", "call 7 of demo", "cost_usd 'abc'")
    ),
    "calls cost_usd Infinity": Odd(
        CALL, (DAY, AT, "Infinity", "settled"), ("calls", "call 7 of demo", "cost_usd 'Infinity'")
    ),
    "calls at not a time": Odd(
        CALL, (DAY, "yesterday", "0.1", "settled"), ("calls", "call 7 of demo", "at 'yesterday'")
    ),
}


@on_each_store
@pytest.mark.parametrize("case", list(REPORTED))
async def test_the_ledger_names_a_call_it_cannot_read(start_plane, case):
    """`plane ledger` (and the TUI's ledger) over a call whose cost or time
    no plane wrote: leaving the row out would understate what was spent, so
    the answer is one sentence naming the row, as a refused request. Before,
    the request failed on a decimal or ISO-format error (said to the operator
    as a bug in plane). The plane itself starts and shows its agents: the
    day's spend is the record the gate reads, and it is checked at start;
    the call is left out of its agent's pace. Before, on PostgreSQL, the
    start failed on that cost ("abc"), or every showing of the agents did
    (an infinite pace, "Infinity")."""
    odd = REPORTED[case]
    plane = await start_plane()
    await plane.db.write(lambda conn: conn.execute(odd.sql, odd.params))
    plane = await start_plane(restart=plane)
    assert {a.name for a in (await plane.rows.snapshot()).agents} == {"demo", "scout"}
    with pytest.raises(StoreError) as refused:
        await plane.runtime.api.handle(p.Ledger())
    said = str(refused.value)
    assert "\n" not in said and all(needle in said for needle in odd.says), said


@dataclass(frozen=True)
class Charted:
    writes: tuple[tuple[str, tuple[object, ...]], ...]
    says: tuple[str, ...]
    """What the refusal names: its table, its row, its column and value."""


PART = "INSERT INTO call_parts (call, part, input_tokens, cost_usd) VALUES (7, 'prompt', 1, ?)"
SAVING = (
    "INSERT INTO savings (id, agent, day, at, model, chars, usd)"
    " VALUES (9, 'demo', ?, ?, 'scripted-model', 10, ?)"
)
NEGATIVE_AMONG = (
    (CALL, (DAY, AT, "-0.05", "settled")),
    (CALL_8, (DAY, AT, "0.1", "settled")),
)
"""A cost below zero in sums that stay above it (-0.05 + 0.1): no sum fails
on it, and it would lower what was spent unseen."""
CHARTED = {
    "calls cost_usd not an amount": Charted(
        ((CALL, (DAY, AT, "abc", "settled")),), ("calls", "call 7 of demo", "cost_usd 'abc'")
    ),
    "calls cost_usd Infinity": Charted(
        ((CALL, (DAY, AT, "Infinity", "settled")),),
        ("calls", "call 7 of demo", "cost_usd 'Infinity'"),
    ),
    "savings usd not an amount": Charted(
        ((SAVING, (DAY, AT, "abc")),), ("savings", "saving 9 of demo", "usd 'abc'")
    ),
    "call_parts cost_usd not an amount": Charted(
        ((CALL, (DAY, AT, "0.1", "settled")), (PART, ("abc",))),
        ("call_parts", "the (prompt) part of call 7", "cost_usd 'abc'"),
    ),
    "calls cost_usd below zero among others": Charted(
        NEGATIVE_AMONG, ("calls", "call 7 of demo", "cost_usd '-0.05'")
    ),
    "savings usd below zero among others": Charted(
        ((SAVING, (DAY, AT, "-0.01")), (SAVING.replace("(9,", "(10,"), (DAY, AT, "0.05"))),
        ("savings", "saving 9 of demo", "usd '-0.01'"),
    ),
}


@pytest.mark.usefixtures("each_store")
@pytest.mark.parametrize("case", list(CHARTED))
async def test_the_charts_name_a_row_they_cannot_read(start_plane, case):
    """The spend charts (the agent's, the fleet's, the fleet's stacked days)
    over a call, a saving or a call's part whose amount no plane wrote: as
    the ledger, one sentence naming the row, for each chart that sums it.
    Before, the request failed on a bare decimal error (said to the operator
    as a bug in plane), or an Infinity reached the reply's own checks."""
    charted = CHARTED[case]
    plane = await start_plane()
    for sql, params in charted.writes:
        await plane.db.write(lambda conn, sql=sql, params=params: conn.execute(sql, params))
    charts: list[p.SpendHistory | p.SpendStack] = [p.SpendHistory(agent="demo"), p.SpendHistory()]
    if not case.startswith("call_parts"):  # the stacked days are not by tool
        charts.append(p.SpendStack(by="agent"))
    for chart in charts:
        with pytest.raises(StoreError) as refused:
            await plane.runtime.api.handle(chart)
        said = str(refused.value)
        assert "\n" not in said and all(needle in said for needle in charted.says), said
        assert "correct or delete that row" in said


SUMMED = {
    "agent": ("calls cost_usd not an amount", "calls row for call 7 of demo has cost_usd 'abc'"),
    "model": (
        "calls cost_usd below zero among others",
        "calls row for call 7 of demo has cost_usd '-0.05'",
    ),
    "tool": (
        "call_parts cost_usd not an amount",
        "call_parts row for the (prompt) part of call 7 has cost_usd 'abc'",
    ),
}


@pytest.mark.parametrize("by", list(SUMMED))  # SQLite only: --summary reads the home's file
def test_the_ledgers_summary_names_a_row_it_cannot_read(tmp_path, migrated_store, by):
    """`plane ledger --summary` adds up the calls (and, by tool, their parts)
    as the charts do, from the file with no plane running: a cost no plane
    wrote is one line naming its row and exit code 1, no traceback. Before,
    the command ended on a bare decimal error."""
    case, says = SUMMED[by]
    home = Home(tmp_path / "home")
    lay_store(home, migrated_store)
    with sqlite3.connect(home.db) as conn:
        for sql, params in CHARTED[case].writes:
            conn.execute(sql, params)
    conn.close()
    ran = plane_cli(home.root, "ledger", "--summary", "--day", DAY, "--by", by)
    assert ran.returncode == 1, ran
    assert ran.stderr.startswith(f"plane: The store's {says}, which is not an amount"), ran
    assert ran.stderr.count("\n") == 1 and "correct or delete that row" in ran.stderr


@on_each_store
def test_plane_serve_says_the_unreadable_ceiling_in_one_line(tmp_path, migrated_store):
    """What the operator sees: `plane serve` on a store whose ceiling row no
    plane wrote ends with one line naming it and exit code 1, no traceback,
    and leaves no socket behind."""
    home = Home(tmp_path / "home")
    lay_store(home, migrated_store)
    asyncio.run(
        _write(
            home,
            "INSERT INTO ceilings (agent, limit_usd, set_at, set_by)"
            " VALUES ('demo', 'abc', ?, 'operator')",
            (AT,),
        )
    )
    config = tmp_path / "agents.yaml"
    config.write_text(CONFIG.replace("{base_url}", "http://127.0.0.1:9/v1"))
    ran = plane_cli(home.root, "serve", "--config", str(config))
    assert ran.returncode == 1, ran
    assert "Traceback" not in ran.stderr
    said = ran.stderr.splitlines()
    assert said[-1].startswith("plane: The store's ceilings row for demo has limit_usd 'abc'")
    assert said[:-1] == [f"plane: config from {config}"], said  # serve's own line, as ever
    assert not home.socket.exists()


@on_each_store
def test_a_call_in_flight_whose_day_cannot_be_read_stops_the_start(tmp_path, migrated_store):
    """A call a stop left in flight, its day no day ('2026-1-x', which sorts
    before every real day, so it is not the latest call the start looks at
    first): the start's sweep counts it at its estimate on its day, and reads
    that day to do so. Before, a bare ISO-format error escaped the start."""
    home = Home(tmp_path / "home")
    lay_store(home, migrated_store)
    asyncio.run(
        _write(
            home,
            "INSERT INTO calls (id, agent, day, at, provider, model, cost_usd, price_source,"
            " status) VALUES (7, 'demo', '2026-1-x', ?1, 'scripted', 'scripted-model', '0.1',"
            " 'table', 'pending'), (8, 'demo', ?2, ?1, 'scripted', 'scripted-model', '0.1',"
            " 'table', 'settled')",
            (AT, DAY),
        )
    )
    config = tmp_path / "agents.yaml"
    config.write_text(CONFIG.replace("{base_url}", "http://127.0.0.1:9/v1"))
    ran = plane_cli(home.root, "serve", "--config", str(config))
    assert ran.returncode == 1, ran
    assert "Traceback" not in ran.stderr
    assert ran.stderr.splitlines()[-1].startswith(
        "plane: The store's calls row for call 7 of demo has day '2026-1-x', which is not a day"
    ), ran.stderr


async def _write(home: Home, sql: str, params: tuple[object, ...]) -> None:
    """One row written to the store the plane of `home` will open, no plane running."""
    db = await open_db(home.db)
    try:
        await db.write(lambda conn: conn.execute(sql, params))
    finally:
        await db.close()


EARLIER = (NOON - timedelta(days=1)).date().isoformat()
BEFORE = (NOON - timedelta(days=2)).date().isoformat()
SCRAPED = {
    "savings usd not an amount": CHARTED["savings usd not an amount"],
    "spend cost_usd not an amount": Charted(
        (("INSERT INTO spend (day, agent, cost_usd) VALUES (?, 'demo', 'abc')", (EARLIER,)),),
        ("spend", f"demo on {EARLIER}", "cost_usd 'abc'"),
    ),
    "grouped calls cost_usd Infinity": Charted(
        (
            (
                "INSERT INTO calls (id, agent, day, at, provider, model, cost_usd, price_source,"
                " status, agent_group) VALUES (7, 'demo', ?, ?, 'scripted', 'scripted-model',"
                " 'Infinity', 'table', 'settled', 'g')",
                (DAY, AT),
            ),
        ),
        ("calls", "call 7 of demo", "cost_usd 'Infinity'"),
    ),
    "call_parts cost_usd not an amount": CHARTED["call_parts cost_usd not an amount"],
    "spend today cost_usd not an amount": Charted(
        (("INSERT INTO spend (day, agent, cost_usd) VALUES (?, 'scout', 'abc')", (DAY,)),),
        ("spend", f"scout on {DAY}", "cost_usd 'abc'"),
    ),
    "group_spend today cost_usd not an amount": Charted(
        (("INSERT INTO group_spend (day, agent_group, cost_usd) VALUES (?, 'g', 'abc')", (DAY,)),),
        ("group_spend", f"g on {DAY}", "cost_usd 'abc'"),
    ),
    "tag_spend cost_usd not an amount": Charted(
        (("INSERT INTO tag_spend (day, tag, cost_usd) VALUES (?, 'nightly', 'abc')", (DAY,)),),
        ("tag_spend", f"nightly on {DAY}", "cost_usd 'abc'"),
    ),
    # Below zero among others whose sum stays above it: each would lower a figure unseen.
    "savings usd below zero among others": CHARTED["savings usd below zero among others"],
    "spend cost_usd below zero among others": Charted(
        (
            ("INSERT INTO spend (day, agent, cost_usd) VALUES (?, 'demo', '-0.05')", (EARLIER,)),
            ("INSERT INTO spend (day, agent, cost_usd) VALUES (?, 'demo', '0.1')", (BEFORE,)),
        ),
        ("spend", f"demo on {EARLIER}", "cost_usd '-0.05'"),
    ),
    "grouped calls cost_usd below zero among others": Charted(
        tuple(
            (sql.replace("status)", "status, agent_group)").replace("?)", "?, 'g')"), params)
            for sql, params in NEGATIVE_AMONG
        ),
        ("calls", "call 7 of demo", "cost_usd '-0.05'"),
    ),
}


@pytest.mark.usefixtures("each_store")
@pytest.mark.parametrize("case", list(SCRAPED))
async def test_metrics_names_a_row_it_cannot_read(start_plane, case):
    """A scrape of `/metrics` sums the ledger since it began (what each
    agent spent, each group's calls, each part of a call, what compression
    saved) and the day's spend by agent, group and tag: over an amount no
    plane wrote, it answers 500 with the one sentence naming the row that
    the charts and the start say. Before, the scrape failed with aiohttp's
    bare "500 Internal Server Error" and a traceback in the log, or (an
    Infinity) served it as a figure."""
    scraped = SCRAPED[case]
    plane = await start_plane(GROUPED, http=HTTP)
    for sql, params in scraped.writes:
        await plane.db.write(lambda conn, sql=sql, params=params: conn.execute(sql, params))
    async with local_client() as client:
        answer = await client.get(
            f"http://127.0.0.1:{plane.plane.http_port}/metrics",
            headers={"Authorization": f"Bearer {plane.token}"},
        )
    assert answer.status_code == 500, answer.text
    said = answer.text
    assert said.count("\n") == 1 and all(needle in said for needle in scraped.says), said
    assert "correct or delete that row" in said


ODD_SUMS = ["abc", "NaN", "Infinity"]
"""A day's cost edited by hand: no amount, or a number that means none."""
ROOMY_GROUP = scripted_config(
    "  demo: {}\n  scout: {}\n",
    limit_usd="100",
    more="groups:\n  g: {limitUsd: 100, agents: [demo]}\nfleet:\n  limitUsd: 100\n",
)
"""Ceilings no test turn reaches: the agents', the group's, the fleet's."""


def _names_the_row(said: str, table: str, row: str, odd: str) -> bool:
    """`said` is the start's one sentence of that row (`plane.money.stored`)."""
    start = f"The store's {table} row for {row} has cost_usd '{odd}', which is not an amount"
    return "\n" not in said and start in said and "correct or delete that row" in said


async def _calls(plane) -> int:
    return len(await plane.db.fetchall("SELECT id FROM calls"))


GROUPED_ONLY = scripted_config(
    "  demo: {}\n  scout: {}\n",
    limit_usd="100",
    more="groups:\n  g: {limitUsd: 100, agents: [demo]}\n",
)
"""Ceilings no test turn reaches, the agents' and demo's group's; no fleet's
(whose spend, every agent's together, a row of demo's would leave unread)."""
TOMORROW = "2026-11-30"
BEGUN = {
    "spend": ("INSERT INTO spend (day, agent, cost_usd) VALUES (?, 'demo', ?)", "demo"),
    "group_spend": ("INSERT INTO group_spend (day, agent_group, cost_usd) VALUES (?, 'g', ?)", "g"),
}


@on_each_store
@pytest.mark.parametrize("odd", ODD_SUMS)
@pytest.mark.parametrize("table", list(BEGUN))
async def test_a_sum_unreadable_when_its_day_begins_holds_its_agents_alone(start_plane, table, odd):
    """One agent's spend row (or its group's) of a day not yet begun, no
    plane's: the day's sums are read at its first gate check. That agent
    alone is held: its send is refused with the sentence naming the row,
    nothing kept or spent, and its row shows it held by an unreadable row;
    every other agent's turns go on, with their sums right. Once the row
    reads again, the agent goes on, its spend counting the row. Before,
    every agent's every send that day was refused with that sentence, and
    the snapshot (the TUI's every row) failed on it."""
    sql, key = BEGUN[table]
    plane = await start_plane(GROUPED_ONLY)
    await plane.db.write(lambda conn: conn.execute(sql, (TOMORROW, odd)))
    await plane.clock.set(NOON + timedelta(hours=12, seconds=30))
    scout = await plane.turn("scout", "hello", within=10)
    assert [m.text for m in scout if m.kind == "agent"] == ["ok"], scout
    with pytest.raises(LedgerError) as refused:
        await plane.send("demo", "hello")
    said = str(refused.value)
    assert _names_the_row(said, table, f"{key} on {TOMORROW}", odd), said
    assert len(plane.llm.requests) == 1
    assert await plane.db.fetchall("SELECT id FROM messages WHERE agent = 'demo'") == []
    rows = {a.name: a for a in (await plane.rows.snapshot()).agents}
    assert (rows["demo"].status, rows["demo"].hold_reason) == ("held", "unreadable")
    assert (rows["scout"].status, rows["scout"].hold_reason) == ("idle", None)
    assert rows["scout"].spend_today_usd == await _spent(plane, "scout")
    fix = f"UPDATE {table} SET cost_usd = '0.5' WHERE day = ?"
    await plane.db.write(lambda conn: conn.execute(fix, (TOMORROW,)))
    demo = await plane.turn("demo", "again", within=10)
    assert [m.text for m in demo if m.kind == "agent"] == ["ok"], demo
    rows = {a.name: a for a in (await plane.rows.snapshot()).agents}
    assert (rows["demo"].status, rows["demo"].hold_reason) == ("idle", None)
    own = Decimal("0.5") if table == "spend" else Decimal(0)
    assert rows["demo"].spend_today_usd == own + await _spent(plane, "demo")


async def _spent(plane, agent: str) -> Decimal:
    """What `agent`'s calls of the day cost, added up from their rows."""
    rows = await plane.db.fetchall(
        "SELECT cost_usd FROM calls WHERE agent = ? AND day = ?", agent, TOMORROW
    )
    assert rows, agent
    return sum((Decimal(cost) for (cost,) in rows), Decimal(0))


@on_each_store
@pytest.mark.parametrize("odd", ODD_SUMS)
async def test_a_groups_spend_edited_while_the_plane_runs_refuses_its_agents_sends(
    start_plane, odd
):
    """The group's spend row of today edited, while the plane runs, to what
    is not an amount: the gate reads it for each of the group's agents. The
    operator's send to one is refused with the sentence the start says of
    that row (which it then does say); nothing is kept, no call is made, and
    an agent outside the group carries on. Before, the send failed on a
    bare decimal error (said to the operator as a bug in plane)."""
    plane = await start_plane(ROOMY_GROUP)
    await plane.turn("demo", "hello")  # today's group_spend row written
    await plane.db.write(lambda conn: conn.execute("UPDATE group_spend SET cost_usd = ?", (odd,)))
    calls = await _calls(plane)
    with pytest.raises(LedgerError) as refused:
        await plane.send("demo", "again")
    said = str(refused.value)
    assert _names_the_row(said, "group_spend", f"g on {DAY}", odd), said
    assert await _calls(plane) == calls and len(plane.llm.requests) == 1
    kept = await plane.db.fetchall("SELECT id FROM messages WHERE text = 'again'")
    assert kept == []
    scout = await plane.turn("scout", "hello", within=10)
    assert [m.text for m in scout if m.kind == "agent"] == ["ok"], scout
    with pytest.raises(StoreError) as started:
        await start_plane(restart=plane)
    assert str(started.value) == said


IN_FLIGHT = CALL.replace("'demo'", "'scout'")
FLEET_ROWS = {
    "spend": ("UPDATE spend SET cost_usd = ? WHERE agent = 'scout'", "spend", f"scout on {DAY}"),
    "a call in flight": (IN_FLIGHT, "calls", "call 7 of scout"),
}


@on_each_store
@pytest.mark.parametrize("odd", ODD_SUMS)
@pytest.mark.parametrize("row", list(FLEET_ROWS))
async def test_a_fleets_cost_edited_while_the_plane_runs_stops_the_turn_at_admission(
    start_plane, each_store, row, odd
):
    """Another agent's spend row of today, or a call in flight, edited while
    the plane runs to what is not an amount: the fleet's ceiling reads it as
    each call is admitted. The turn stops with the sentence naming that row,
    its call neither written nor made, and goes on once the row reads again.
    (On PostgreSQL the gate reads the fleet's spend from the store, every
    plane's calls, so the send itself is refused with that sentence.)
    Before, the turn failed on a bare decimal error (the worker's failure,
    a bug in plane), with no word in the agent's conversation."""
    sql, table, named = FLEET_ROWS[row]
    plane = await start_plane(ROOMY_GROUP)
    await plane.turn("scout", "hello")  # today's spend row of scout written
    params = (odd,) if row == "spend" else (DAY, AT, odd, "pending")
    await plane.db.write(lambda conn: conn.execute(sql, params))
    calls = await _calls(plane)
    if each_store == "postgresql":
        with pytest.raises(LedgerError) as refused:
            await plane.send("demo", "hello")
        told = [str(refused.value)]
    else:
        said = await plane.turn("demo", "hello", within=10)
        told = [m.text for m in said if m.kind in ("plane", "agent")]
        assert len(told) == 1 and told[0].startswith("The turn stopped. The store's"), said
    assert _names_the_row(told[0], table, named, odd), told
    assert await _calls(plane) == calls and len(plane.llm.requests) == 1
    fixed = (sql, ("1.721",)) if row == "spend" else ("DELETE FROM calls WHERE id = 7", ())
    await plane.db.write(lambda conn: conn.execute(*fixed))
    again = await plane.turn("demo", "once more", within=10)
    assert [m.text for m in again if m.kind == "agent"] == ["ok"], again


TAGGED = GATEWAY_CONFIG + "tags:\n  ticket-1: {limitUsd: 100}\n"
HELLO: list[MessageParam] = [{"role": "user", "content": "hello"}]


@ON_ONE_WORKER
@on_each_store
@pytest.mark.parametrize("odd", ODD_SUMS)
async def test_a_tags_spend_edited_while_the_plane_runs_refuses_its_gateway_calls(
    start_gateway, odd
):
    """A tag's spend row of today edited, while the plane runs, to what is
    not an amount: a gateway call carrying the tag is refused in the
    client's own error shape with the sentence naming that row, nothing
    written nor sent upstream; calls without the tag go on. Before, the
    call failed as "The plane failed to handle this call" (a bare decimal
    error in the log)."""
    gw = await start_gateway(TAGGED)
    gw.llm.default_reply = Reply("ok", Usage(input_tokens=90, output_tokens=5))
    tagged = anthropic_sdk(
        base_url=gw.url, api_key=gw.keys["claude"], max_retries=0,
        default_headers={"x-plane-tag": "ticket-1"},
    )  # fmt: skip
    async with tagged:
        await tagged.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
        await gw.db.write(lambda conn: conn.execute("UPDATE tag_spend SET cost_usd = ?", (odd,)))
        calls = await _calls(gw)
        with pytest.raises(anthropic.APIStatusError) as refused:
            await tagged.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
    said = refused.value.message
    assert _names_the_row(said, "tag_spend", f"ticket-1 on {DAY}", odd), said
    assert await _calls(gw) == calls and len(gw.llm.requests) == 1
    async with anthropic_sdk(base_url=gw.url, api_key=gw.keys["claude"], max_retries=0) as bare:
        await bare.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
    assert len(gw.llm.requests) == 2


ADMITTED = {
    "fleet": ("INSERT INTO spend (day, agent, cost_usd) VALUES (?, 'scout', ?)", "spend", "scout"),
    "group": (
        "INSERT INTO group_spend (day, agent_group, cost_usd) VALUES (?, 'g', ?)",
        "group_spend",
        "g",
    ),
    "tag": ("INSERT INTO tag_spend (day, tag, cost_usd) VALUES (?, 't', ?)", "tag_spend", "t"),
}


@on_each_store
@pytest.mark.parametrize("odd", ODD_SUMS)
@pytest.mark.parametrize("scope", list(ADMITTED))
async def test_an_admission_over_a_cost_edited_while_the_plane_runs_writes_nothing(
    start_plane, scope, odd
):
    """The admission itself, for a row edited after the gate looked (the
    fleet's, a group's, a tag's spend of today): the call is refused with
    the sentence naming the row, and nothing is written. Before, a bare
    decimal error, or a refusal saying the budget "has spent Infinity"."""
    sql, table, key = ADMITTED[scope]
    plane = await start_plane(ROOMY_GROUP)
    await plane.services.ledger.spend_today("demo")  # the day's sums read, as after a turn
    await plane.db.write(lambda conn: conn.execute(sql, (DAY, odd)))
    ceiling = Decimal(100)
    with pytest.raises(LedgerError) as refused:
        await plane.services.ledger.open_call(
            "demo", "scripted", "scripted-model", Decimal("0.01"), "estimate",
            fleet_ceiling=ceiling if scope == "fleet" else None,
            group=Budget("g", ceiling) if scope == "group" else None,
            tag=Budget("t", ceiling) if scope == "tag" else None,
        )  # fmt: skip
    said = str(refused.value)
    assert _names_the_row(said, table, f"{key} on {DAY}", odd), said
    assert await _calls(plane) == 0


PENDING = "SELECT id FROM calls WHERE status = 'pending'"


@on_each_store
@pytest.mark.parametrize("odd", ODD_SUMS)
async def test_an_estimate_edited_in_flight_is_named_when_the_operator_cuts_the_turn(
    start_plane, odd
):
    """The estimate of a call in flight edited, while the plane runs, to
    what is not an amount, and the operator cuts the turn: the cut counts
    each call in flight at its estimate, so the turn stops with the sentence
    the start says of that row, and nothing is counted (the call stays in
    flight, for the operator to correct). Before, the cut failed on a bare
    decimal error (a bug in plane), or counted Infinity."""
    plane = await start_plane(ROOMY)
    subscription = await plane.mid_answer("demo", "a long question")
    [(call,)] = await plane.db.fetchall(PENDING)
    await plane.db.write(
        lambda conn: conn.execute("UPDATE calls SET cost_usd = ? WHERE id = ?", (odd, call))
    )
    client = await plane.client()
    assert isinstance(await client.request(p.Interrupt(agent="demo")), p.OkReply)
    said = await plane.until_turn_ends("demo", subscription, within=10)
    told = [m.text for m in said if m.kind in ("plane", "agent")]
    assert len(told) == 1 and told[0].startswith("The turn stopped. The store's"), said
    assert _names_the_row(told[0], "calls", f"call {call} of demo", odd), told
    assert [tuple(r) for r in await plane.db.fetchall(PENDING)] == [(call,)]
    assert await plane.db.fetchall("SELECT day FROM spend WHERE cost_usd = ?", odd) == []


@on_each_store
@pytest.mark.parametrize("close", ["cut", "fail"])
async def test_a_call_closed_from_its_row_names_an_estimate_it_cannot_read(start_plane, close):
    """A call the plane closes from its row rather than from memory (cut
    once its lease ran low, or failed, after the operator's cut took it out
    of memory), whose estimate was edited meanwhile: the close is refused
    with the sentence naming the row, and nothing is written. Before, a
    bare decimal error, which the cut's caller does not catch."""
    plane = await start_plane()
    await plane.db.write(lambda conn: conn.execute(CALL, (DAY, AT, "abc", "pending")))
    with pytest.raises(LedgerError) as refused:
        await getattr(plane.services.ledger, close)(7)
    assert _names_the_row(str(refused.value), "calls", "call 7 of demo", "abc"), refused.value
    row = await plane.db.fetchone("SELECT status, cost_usd FROM calls WHERE id = 7")
    assert row is not None and tuple(row) == ("pending", "abc")


@on_each_store
@pytest.mark.parametrize("column", ["from_usd", "to_usd"])
async def test_an_approval_link_names_an_offer_it_cannot_read(start_plane, receiver, column):
    """The offer an alert's link answers, its amounts edited by hand to what
    is not an amount: following the link (to look, or to raise) is answered
    with the one sentence naming the offer's row, and nothing changes.
    Before, aiohttp's bare "500 Internal Server Error", a traceback in the
    log."""
    plane = await held_plane(start_plane, receiver)
    link = held_links(receiver)["+$0.40 today"]
    nonce = dict(parse_qsl(urlsplit(link).query))["n"]
    await plane.db.write(
        lambda conn: conn.execute(f"UPDATE offers SET {column} = 'abc' WHERE nonce = ?", (nonce,))
    )
    before = await standing(plane)
    for answer in (await get(link), await post(link)):
        said = answer.text
        assert answer.status_code == 500 and said.count("\n") == 1, said
        assert said.startswith(f"The store's offers row for offer {nonce} of demo has {column}")
        assert "'abc', which is not an amount" in said and "correct or delete that row" in said
    assert await standing(plane) == before


@ON_ONE_WORKER
@on_each_store
@pytest.mark.parametrize("odd", ODD_SUMS)
@pytest.mark.parametrize("column", ["gateway_calls base_usd", "calls cost_usd"])
async def test_a_gateway_agents_learned_cost_no_plane_wrote_refuses_its_calls(
    start_gateway, column, odd
):
    """What a gateway agent's calls really cost, against what was expected
    of them, read back after a restart for its next estimate: a row edited
    by hand to what is not an amount refuses the agent's calls in the
    client's own error shape with the sentence naming the row, nothing sent
    upstream, until the row reads again. Before, the call failed as "The
    plane failed to handle this call" (a bare decimal error in the log), or
    an Infinity made every estimate infinite."""
    table, name = column.split()
    gw = await start_gateway()
    async with anthropic_sdk(base_url=gw.url, api_key=gw.keys["claude"], max_retries=0) as sdk:
        await sdk.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
    [(call, was)] = await gw.db.fetchall(
        "SELECT g.call, " + ("g.base_usd" if table == "gateway_calls" else "c.cost_usd")
        + " FROM gateway_calls g JOIN calls c ON c.id = g.call"
    )  # fmt: skip
    key = "call" if table == "gateway_calls" else "id"
    edit = f"UPDATE {table} SET {name} = ? WHERE {key} = ?"
    await gw.db.write(lambda conn: conn.execute(edit, (odd, call)))
    gw = await start_gateway(restart=gw)
    async with anthropic_sdk(base_url=gw.url, api_key=gw.keys["claude"], max_retries=0) as sdk:
        with pytest.raises(anthropic.APIStatusError) as refused:
            await sdk.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
        said = refused.value.message
        start = f"The store's {table} row for call {call} of claude has {name} '{odd}'"
        assert "\n" not in said and start in said and "correct or delete that row" in said, said
        assert len(gw.llm.requests) == 1
        await gw.db.write(lambda conn: conn.execute(edit, (was, call)))
        await sdk.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
    assert len(gw.llm.requests) == 2
