"""A hostile MCP server gets nothing and stops nothing.

A real plane, an agent on the scripted model, and tests/attack/hostile_mcp.py
started by the plane from its own config, as three servers: one that never
answers (not even the handshake), one that dies at start, and one whose
tools answer 6 MB in one message, answer 1 MB of lines, crash mid-call,
never answer, leave a detached process behind, and try every way out of the
sandbox (a file outside the workspace, the plane's home, token, database,
environment and socket). Each is one clear line; the turn ends with the
agent's answer; the ceiling, the ledger and the conversation are as the turn
made them; no process of theirs is left once the session ends.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from decimal import Decimal
from pathlib import Path

import pytest

from plane.tools import sandbox
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.processes import running

pytestmark = [
    pytest.mark.skipif(sandbox.abi() == 0, reason="confinement needs Landlock"),
    pytest.mark.slow,
]

HOSTILE = Path(__file__).resolve().parent / "hostile_mcp.py"
CENT = Usage(input_tokens=10)  # $0.01 at the test prices
SECRET = "the-planes-own-secret-31d9"


def config(tag: str) -> str:
    server = f"command: {sys.executable}, read: [{HOSTILE.parent}]"
    return f"""
defaults:
  limitUsd: 1
  provider: scripted
  model: scripted-model
providers:
  scripted:
    kind: openai-compatible
    base_url: {{base_url}}
    models: [scripted-model]
    max_retries: 0
pricing:
  scripted-model: {{input: 1000, cached_input: 100, output: 2000}}
agents:
  demo:
    tools: [hostile.*, mute.*, dying.*]
    mcp:
      servers:
        hostile: {{{server}, args: [{HOSTILE}, {tag}], timeout_s: 3}}
        mute: {{{server}, args: [{HOSTILE}, --mute, {tag}], start_timeout_s: 2}}
        dying: {{{server}, args: [{HOSTILE}, --die, {tag}]}}
"""


async def gone(text: str, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while running(text):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


def results(request: dict) -> dict[str, str]:
    """Each tool result of the request, by the name of the tool that was called."""
    names = {
        call["id"]: call["function"]["name"]
        for m in request["messages"]
        for call in m.get("tool_calls") or []
    }
    return {
        names[m["tool_call_id"]]: m["content"] for m in request["messages"] if m["role"] == "tool"
    }


async def test_a_hostile_mcp_server_gets_nothing_and_stops_nothing(
    start_plane, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("PLANE_TEST_SECRET", SECRET)  # in the plane's own environment
    tag = f"hostile-{uuid.uuid4().hex[:12]}"
    mark = f"{(uuid.uuid4().int % 9000) + 1000}.5"  # `sleep 1234.5`: this test's own
    outside = tmp_path / "outside"
    outside.mkdir()
    plane = await start_plane(config(tag))
    home = plane.home.root
    llm = plane.llm
    escape = {"home": str(home), "outside": str(outside), "secret": SECRET}
    llm.reply("", tool_calls=[("hostile__big", {}), ("hostile__escape", escape)], usage=CENT)
    llm.reply("", tool_calls=[("hostile__flood", {})], usage=CENT)
    llm.reply("", tool_calls=[("hostile__crash", {})], usage=CENT)
    llm.reply("", tool_calls=[("hostile__hang", {})], usage=CENT)
    llm.reply("", tool_calls=[("hostile__leave", {"mark": mark})], usage=CENT)
    llm.reply("I give up.", usage=CENT)
    before = await plane.rows.state("demo")

    said = await plane.turn("demo", "do your worst", within=90)

    # Each server that could not start is one line, and the turn went on.
    assert [m.text for m in said if m.kind == "plane"] == [
        "The MCP server mute could not be used: it did not start within 2s. Its tools are "
        "not offered in this session; /new starts one that tries again.",
        "The MCP server dying could not be used: it exited with 7 (hostile: refusing to "
        "start). Its tools are not offered in this session; /new starts one that tries again.",
    ]
    assert said[-2].text == "I give up." and said[-1].kind == "cost"
    got = results(llm.requests[-1])
    again = "; it starts again at the next call of its tools."
    assert got["hostile__flood"] == (
        "hostile.flood failed: its MCP server sent a message over 4 MB, so it was stopped" + again
    )
    assert got["hostile__crash"] == (
        "hostile.crash failed: its MCP server exited with 3 (hostile: crashing on purpose)" + again
    )
    assert got["hostile__hang"] == (
        "hostile.hang failed: its MCP server gave no answer within 3s, so it was stopped" + again
    )
    assert len(got["hostile__big"]) < 70_000, "capped as run_command's output is"
    assert "step 0 went fine" in got["hostile__big"] and "step 44999" in got["hostile__big"]

    tried = json.loads(got["hostile__escape"])
    assert not (outside / "pwned.txt").exists()
    assert tried["write outside"].startswith("PermissionError"), tried
    for what in ("read the token", "list the home", "read the database"):
        assert tried[what].startswith("PermissionError"), (what, tried[what])
    assert tried["the secret in my environment"] is False
    assert tried["the plane's environment"].startswith(("PermissionError", "FileNotFoundError"))
    assert "unauthorized" in tried["the plane's socket"] or not tried[
        "the plane's socket"
    ].startswith("GOT"), tried["the plane's socket"]

    # What the turn's calls cost, and nothing else, against a ceiling nobody moved.
    after = await plane.rows.state("demo")
    assert after.limit_usd == before.limit_usd == 1
    assert await plane.services.ledger.spend_by_agent() == {"demo": Decimal("0.06")}
    kinds = [m.kind for m in await plane.services.conversation.history("demo")]
    assert kinds == ["operator", "plane", "plane", *["tool"] * 6, "agent", "cost"]

    # The process it left behind lives with its server's session, and no longer.
    assert running(f"sleep {mark}"), "the session's server, and its child, still run"
    await plane.stop()
    assert await gone(f"sleep {mark}")
    assert await gone(tag), "no server of this test is left"


async def test_a_turn_cut_while_a_server_hangs_ends_at_once_and_its_server_with_the_plane(
    start_plane,
):
    tag = f"hostile-{uuid.uuid4().hex[:12]}"
    plane = await start_plane(config(tag).replace("timeout_s: 3", "timeout_s: 600"))
    plane.llm.reply("", tool_calls=[("hostile__hang", {})], usage=CENT)
    subscription = plane.bus.subscribe()
    await plane.send("demo", "hang")
    for _ in range(3000):  # its call is in flight
        if len(plane.llm.requests) == 1 and running(f"{HOSTILE} {tag}"):
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.5)
    started = time.monotonic()
    await plane.runtime.api.handle(p.Interrupt(agent="demo"))
    said = await plane.until_turn_ends("demo", subscription)
    assert time.monotonic() - started < 10, "the cut is not held up by the server"
    assert any("interrupted" in m.text.lower() or "cut" in m.text.lower() for m in said), said
    await plane.stop()
    assert await gone(tag), "the plane's stop ends its servers"


async def test_a_turn_cut_while_a_server_will_not_start_ends_at_once_and_so_does_the_server(
    start_plane,
):
    tag = f"hostile-{uuid.uuid4().hex[:12]}"
    text = config(tag).replace("start_timeout_s: 2", "start_timeout_s: 600")
    plane = await start_plane(
        text.replace("tools: [hostile.*, mute.*, dying.*]", "tools: [mute.*]")
    )
    subscription = plane.bus.subscribe()
    await plane.send("demo", "hello")
    for _ in range(3000):  # the mute server is up, and the turn waits for its handshake
        if running(f"--mute {tag}"):
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.5)
    started = time.monotonic()
    await plane.runtime.api.handle(p.Interrupt(agent="demo"))
    await plane.until_turn_ends("demo", subscription)
    assert time.monotonic() - started < 10, "the cut is not held up by the server"
    assert await gone(tag, within=10), "a server cut off while starting does not linger"
    assert plane.llm.requests == [], "nothing was sent for a turn cut before its first call"
