"""A new agent's tools, on a real plane over its socket: none, read-only or
all, as asked; unasked, what suits the model (none on the embedded one, whose
first turn with every tool cost 12–20× a plain one); kept across restarts;
a value that is not one of the three is refused and makes no agent."""

from __future__ import annotations

from plane.agents.toolsets import READ_ONLY
from plane.config import EMBEDDED_MODEL
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.plane.daemon.test_socket import raw

CENT = Usage(input_tokens=10)


def offered(request: dict) -> list[str]:
    return sorted(t["function"]["name"] for t in request.get("tools", []))


async def create(plane, name: str, **fields) -> p.AgentState:
    client = await plane.client()
    reply = await client.request(p.NewAgent(name=name, model="scripted-model", **fields))
    assert isinstance(reply, p.NewAgentReply)
    return reply.agent


async def test_the_snapshot_says_which_tools_suit_each_model(start_plane):
    plane = await start_plane()
    client = await plane.client()
    reply = await client.request(p.Status())
    assert isinstance(reply, p.SnapshotReply)
    assert reply.snapshot.tool_defaults == {
        "scripted-model": "all",
        "other-model": "all",
        EMBEDDED_MODEL: "none",
    }


async def test_a_new_agent_gets_the_tools_asked_for_and_keeps_them(start_plane):
    plane = await start_plane()
    reader = await create(plane, "reader", tools="read-only")
    bare = await create(plane, "bare", tools="none")
    full = await create(plane, "full")  # unasked, on a real provider's model: all
    assert (reader.tools, bare.tools, full.tools) == (READ_ONLY, (), None)

    plane = await start_plane(restart=plane)
    for name in ("reader", "bare", "full"):
        plane.llm.reply("ok", usage=CENT)
        await plane.turn(name, "look around")
    reader_call, bare_call, full_call = plane.llm.requests[-3:]
    assert offered(reader_call) == sorted(READ_ONLY)
    assert "tools" not in bare_call, "no tools: no schema in the prompt at all"
    assert {"run_command", "write_file"} <= set(offered(full_call))


async def test_a_tool_set_that_is_not_one_of_the_three_makes_no_agent(start_plane):
    plane = await start_plane()
    say, writer = await raw(plane)
    await say(plane.hello())
    frame = b'{"type":"new_agent","id":2,"name":"odd","model":"scripted-model","tools":"some"}\n'
    reply = await say(frame)
    writer.close()
    assert isinstance(reply, p.Error) and reply.id == 2
    assert "odd" not in plane.services.roster.names()
    assert not plane.home.workspace("odd").exists()


async def test_an_agent_on_the_embedded_model_gets_no_tools_unasked(start_plane):
    """The embedded provider's choice, without starting the model itself."""
    plane = await start_plane()
    spec = await plane.services.roster.create("tiny", EMBEDDED_MODEL, "")
    assert spec.tools == ()
    spec = await plane.services.roster.create("tiny2", EMBEDDED_MODEL, "", "read-only")
    assert spec.tools == READ_ONLY
