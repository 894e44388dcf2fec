"""MCP servers as tools, end to end: a real plane, an agent on the scripted
model, and real MCP servers over stdio, started by the plane from its own
config — a small one written with the SDK (tests/support/mcp_notes.py) and a
published one from PyPI (mcp-server-time, which needs no network).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from plane.tools import sandbox
from plane.wire import protocol as p
from plane.wire.client import RequestFailed
from plane.wire.protocol import Usage

pytestmark = pytest.mark.xdist_group("mcp-sdk")
"""On one worker with the other MCP tests: the SDK takes ~0.6 CPU-s to import, once
a worker (plane/tools/mcp/link.py loads it at the first session with servers)."""

SUPPORT = Path(__file__).resolve().parents[2] / "support"
NOTES_SERVER = SUPPORT / "mcp_notes.py"
TIME_SERVER = Path(sys.executable).parent / "mcp-server-time"
CENT = Usage(input_tokens=10)  # $0.01 at the test prices
SANDBOX = "true" if sandbox.abi() > 0 else "false"  # where Landlock is, confined as shipped


def config(agent_block: str, defaults_mcp: str = "") -> str:
    return f"""
defaults:
  limitUsd: 1
  provider: scripted
  model: scripted-model
{defaults_mcp}
providers:
  scripted:
    kind: openai-compatible
    base_url: {{base_url}}
    models: [scripted-model]
    max_retries: 0
pricing:
  scripted-model: {{input: 1000, cached_input: 100, output: 2000}}
sandbox: {SANDBOX}
agents:
  demo:
{agent_block}
"""


NOTES = f"""
    tools: [read_file, notes.*]
    mcp:
      servers:
        notes:
          command: {sys.executable}
          args: [{NOTES_SERVER}]
          read: [{SUPPORT}]
          env: {{GREETING: hello}}
"""


def offered(request: dict) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


def tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


async def test_an_agent_calls_an_mcp_tool_and_the_result_reaches_the_model_and_people(
    start_plane,
):
    plane = await start_plane(config(NOTES))
    llm = plane.llm
    llm.reply("", tool_calls=[("notes__add_note", {"text": "buy milk"})], usage=CENT)
    llm.reply("", tool_calls=[("notes__read_notes", {}), ("notes__where", {})], usage=CENT)
    llm.reply("Noted.", usage=CENT)
    said = await plane.turn("demo", "remember to buy milk")

    workspace = plane.home.workspace("demo")
    assert (workspace / "notes.txt").read_text() == "buy milk\n", "it ran in the workspace"
    assert offered(llm.requests[0]) == [
        "read_file",
        "notes__add_note",
        "notes__count",
        "notes__read_notes",
        "notes__where",
    ]
    results = tool_results(llm.requests[-1])
    assert results[:2] == ["noted (1 notes)", "buy milk\n"]
    where = results[2]
    assert f"cwd={workspace}" in where and f"HOME={workspace}" in where
    assert "'GREETING'" in where  # its own env: crossed; the plane's: not
    assert "SCRIPTED" not in where.upper() and "PLANE_HOME" not in where

    lines = [m.text for m in said if m.kind == "tool"]
    assert lines[0].startswith("notes.add_note → noted (1 notes)")
    assert lines[1].startswith("notes.read_notes → buy milk")
    assert said[-2].text == "Noted." and said[-1].kind == "cost"

    # What cost by tool reads: each result of the history names its tool and
    # server, in the store (read after a restart).
    plane = await start_plane(restart=plane)
    history = await plane.services.transcript.load("demo")
    kept = [(m.tool, m.mcp_server) for m in history if m.role == "tool"]
    assert kept == [
        ("notes.add_note", "notes"),
        ("notes.read_notes", "notes"),
        ("notes.where", "notes"),
    ]


@pytest.mark.slow
async def test_the_tool_list_is_frozen_for_the_session_and_the_server_lives_with_it(
    start_plane,
):
    plane = await start_plane(config(NOTES))
    llm = plane.llm
    for _ in range(2):
        llm.reply("", tool_calls=[("notes__count", {})], usage=CENT)
        llm.reply("Counted.", usage=CENT)
    await plane.turn("demo", "count")
    await plane.turn("demo", "count again")
    first, second = llm.requests[0], llm.requests[2]
    assert json.dumps(first["tools"]) == json.dumps(second["tools"]), "the same bytes each turn"
    assert tool_results(llm.requests[-1]) == ["call 1 of this process", "call 2 of this process"]

    await plane.send("demo", "/new")  # a new session: its servers start anew
    llm.reply("", tool_calls=[("notes__count", {})], usage=CENT)
    llm.reply("Counted.", usage=CENT)
    await plane.turn("demo", "count once more")
    assert tool_results(llm.requests[-1]) == ["call 1 of this process"]


async def test_tools_the_allowlist_leaves_out_are_not_offered_nor_callable(start_plane):
    block = NOTES.replace("tools: [read_file, notes.*]", "tools: [notes.read_notes]")
    plane = await start_plane(config(block))
    llm = plane.llm
    llm.reply("", tool_calls=[("notes__add_note", {"text": "sneaky"})], usage=CENT)
    llm.reply("Fine.", usage=CENT)
    said = await plane.turn("demo", "add a note")
    assert offered(llm.requests[0]) == ["notes__read_notes"]
    assert "There is no tool named 'notes__add_note'" in tool_results(llm.requests[-1])[0]
    assert not (plane.home.workspace("demo") / "notes.txt").exists()
    assert [m.text.split(" → ")[0] for m in said if m.kind == "tool"] == [
        "notes__add_note (refused)"
    ]


async def test_a_published_server_from_pypi_works_end_to_end(start_plane):
    servers = f"""
  mcp:
    servers:
      time:
        command: {TIME_SERVER}
        args: [--local-timezone, UTC]
"""
    plane = await start_plane(config("    tools: [time.get_current_time]", servers))
    llm = plane.llm
    llm.reply("", tool_calls=[("time__get_current_time", {"timezone": "Asia/Tokyo"})], usage=CENT)
    llm.reply("It is late in Tokyo.", usage=CENT)
    said = await plane.turn("demo", "what time is it in Tokyo?")
    assert offered(llm.requests[0]) == ["time__get_current_time"]
    [result] = tool_results(llm.requests[-1])
    assert json.loads(result)["timezone"] == "Asia/Tokyo"
    assert [m.text.split(" → ")[0] for m in said if m.kind == "tool"] == ["time.get_current_time"]


async def test_a_server_that_cannot_start_is_one_line_and_the_turn_goes_on(start_plane):
    block = """
    mcp:
      servers:
        ghost: {command: /nonexistent/mcp-ghost}
"""
    plane = await start_plane(config(block))
    plane.llm.reply("I answer without it.", usage=CENT)
    said = await plane.turn("demo", "hello")
    notices = [m.text for m in said if m.kind == "plane"]
    assert notices == [
        "The MCP server ghost could not be used: it could not be run (/nonexistent/mcp-ghost: "
        "No such file or directory). Its tools are not offered in this session; /new starts "
        "one that tries again."
    ]
    assert said[-2].text == "I answer without it."
    assert "ghost__" not in json.dumps(plane.llm.requests[0].get("tools", []))


@pytest.mark.slow  # 1.65 s alone: a real MCP server started for the session
async def test_a_message_too_large_is_told_the_room_the_mcp_tools_leave_it(start_plane):
    """The refusal's room counts the schemas of the MCP tools the agent's
    session offers, as it counts the registry's."""
    small = config(NOTES).replace(
        "    max_retries: 0\n", "    max_retries: 0\n    context_window: 4000\n"
    )
    plane = await start_plane(small)
    paste = "2026-11-29 12:00:01 worker[311]: INFO request served in 12 ms\n" * 330
    client = await plane.client()
    with pytest.raises(RequestFailed) as before:
        await client.request(p.Send(agent="demo", text=paste))
    plane.llm.reply("Noted.", usage=CENT)
    await plane.turn("demo", "hello")  # the session starts its MCP servers
    with pytest.raises(RequestFailed) as after:
        await client.request(p.Send(agent="demo", text=paste))
    room = re.compile(r"about ([\d.]+k?) are left")
    left_before = room.search(before.value.error.message)
    left_after = room.search(after.value.error.message)
    assert left_before is not None and left_after is not None
    assert left_after.group(1) != left_before.group(1), "the notes server's tools take room"
