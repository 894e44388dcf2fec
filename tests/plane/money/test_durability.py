"""Money under stress: a plane killed mid-call under-counts nothing and
counts nothing twice; many clients at once never push an agent past its
ceiling by more than one turn; nothing anyone sent is lost."""

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from decimal import Decimal

import pytest

from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.answering import until_it_answers
from tests.support.command import plane_cli
from tests.support.fixtures_plane import CONFIG
from tests.support.scripted_llm import Reply


def cli(home, *args):
    """A command against the plane in its own process, run in this one (a
    process a command would cost a Python start each time)."""
    return plane_cli(home, *args)


def serve(home, config):
    process = subprocess.Popen(
        [sys.executable, "-m", "plane", "serve", "--config", str(config)],
        env={**os.environ, "PLANE_HOME": str(home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    until_it_answers(home, process)
    return process


def ledger(home):
    return json.loads(cli(home, "ledger", "--json").stdout)["calls"]


def statuses(home):
    """The calls' statuses, read from the database while the plane runs (a
    `plane ledger` per poll would cost a Python start each time); read only,
    so it never checkpoints the WAL for the plane."""
    db = sqlite3.connect(f"file:{home / 'plane.db'}?mode=ro", uri=True)
    try:
        return [status for (status,) in db.execute("SELECT status FROM calls ORDER BY id")]
    finally:
        db.close()


@pytest.mark.slow
def test_a_plane_killed_mid_call_keeps_the_estimate_and_the_message(tmp_path, scripted_llm):
    home, config = tmp_path / "home", tmp_path / "agents.yaml"
    # A ceiling well above the pending estimate (prompt + 512 output tokens).
    text = CONFIG.replace("{base_url}", scripted_llm.base_url).replace("limitUsd: 1", "limitUsd: 9")
    config.write_text(text)
    scripted_llm.reply("too late", usage=Usage(input_tokens=10), delay_s=30)
    first = serve(home, config)
    assert cli(home, "send", "demo", "a question nobody may lose").returncode == 0
    deadline = time.monotonic() + 20
    # The call is written pending before it is sent: killed in between, the
    # first plane's reply ("too late", 30 s away) would be the next plane's.
    while "pending" not in statuses(home) or not scripted_llm.received:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    [pending] = ledger(home)
    first.send_signal(signal.SIGKILL)
    first.wait()

    scripted_llm.reply("answered after the crash", usage=Usage(input_tokens=10))
    second = serve(home, config)
    try:
        deadline = time.monotonic() + 20
        while len(statuses(home)) < 2 or statuses(home)[-1] == "pending":
            assert time.monotonic() < deadline, (ledger(home), scripted_llm.requests[-1])
            time.sleep(0.05)
        interrupted, settled = ledger(home)
        assert interrupted["id"] == pending["id"] and interrupted["status"] == "interrupted"
        assert interrupted["cost_usd"] == pending["cost_usd"] and interrupted["estimated"]
        assert Decimal(interrupted["cost_usd"]) > 0
        assert (settled["status"], settled["cost_usd"]) == ("settled", "0.01")
        status = json.loads(cli(home, "status", "--json").stdout)
        demo = next(a for a in status["agents"] if a["name"] == "demo")
        expected = Decimal(interrupted["cost_usd"]) + Decimal("0.01")
        assert Decimal(demo["spend_today_usd"]) == expected
    finally:
        second.terminate()
        second.wait(timeout=20)
    rows = (
        sqlite3.connect(home / "plane.db")
        .execute("SELECT kind, text FROM messages WHERE agent = 'demo' ORDER BY id")
        .fetchall()
    )
    assert ("operator", "a question nobody may lose") in rows
    assert ("agent", "answered after the crash") in rows


async def test_many_clients_at_once_never_overspend(start_plane):
    plane = await start_plane()
    plane.llm.default_reply = Reply("ok", usage=Usage(input_tokens=300), delay_s=0.05)  # $0.30
    clients = [await plane.client() for _ in range(8)]

    async def burst(client, n):
        for i in range(6):
            agent = ("demo", "scout")[(n + i) % 2]
            await client.request(p.Send(agent=agent, text=f"client {n} message {i}"))
            await asyncio.sleep(0.01 * (n % 3))

    await asyncio.gather(*(burst(c, n) for n, c in enumerate(clients)))
    await plane.quiet()
    for agent in ("demo", "scout"):
        spent = await plane.services.ledger.spend_today(agent)
        assert spent <= Decimal("1.30"), (agent, spent)
        history = await plane.services.conversation.history(agent, limit=1000)
        assert sum(m.kind == "operator" for m in history) == 24, "nothing lost"
