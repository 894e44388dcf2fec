"""One vocabulary for an agent's tools: `none`, `read-only` and `all` are
words in `plane new` and the new-agent form, so they are words in `plane
edit` and the edit form too (before, `read-only` made an agent and was
"not a tool" when editing one). Real plane, over its socket."""

from __future__ import annotations

import pytest

from plane.agents.toolsets import READ_ONLY
from plane.wire import protocol as p
from tests.plane.agents.test_lifecycle import made, refused
from tests.support.fixtures_plane import CONFIG


async def test_edit_takes_read_only_as_new_does(start_plane):
    plane = await start_plane()
    client = await made(plane)
    reply = await client.request(p.EditAgent(agent="poet", tools=["read-only"]))
    assert isinstance(reply, p.AgentReply)
    assert reply.agent.tools == READ_ONLY
    history = await plane.services.conversation.history("poet", 10)
    assert history[-1].text == f"Edited by the operator: read-only tools ({', '.join(READ_ONLY)})."


@pytest.mark.parametrize(
    ("tools", "said"),
    [
        (["read-only", "grep"], "'read-only' stands alone"),
        (["rm_rf"], "(or all, read-only, or none; an MCP server's as server.tool or server.*)"),
        (["time.now"], "'time.now' names the MCP server 'time'; it has no MCP servers."),
    ],
)
async def test_read_only_beside_names_or_a_wrong_name_is_refused_naming_it(
    start_plane, tools, said
):
    plane = await start_plane()
    client = await made(plane)
    before = await plane.rows.state("poet")
    assert said in await refused(client, p.EditAgent(agent="poet", tools=tools))
    assert await plane.rows.state("poet") == before


MCP_DEFAULTS = CONFIG.replace(
    "  model: scripted-model\n",
    "  model: scripted-model\n  mcp:\n    servers:\n      time: {command: mcp-server-time}\n",
    1,
)
"""The fixture's plane, every agent given the defaults' MCP server `time`."""


async def test_edit_takes_an_mcp_servers_tools_as_agents_yaml_does(start_plane):
    """An agent made at run time has the defaults' MCP servers: its tools may
    be given as `server.tool` or `server.*` when editing it too (before, any
    such name was "not a tool")."""
    plane = await start_plane(MCP_DEFAULTS)
    client = await made(plane)
    edit = p.EditAgent(agent="poet", tools=["time.get_current_time", "read_file", "time.*"])
    reply = await client.request(edit)
    assert reply.agent.tools == ("read_file", "time.get_current_time", "time.*")
    before = await plane.rows.state("poet")
    said = await refused(client, p.EditAgent(agent="poet", tools=["clock.now"]))
    assert said == "'clock.now' names the MCP server 'clock'; its servers are time."
    assert await plane.rows.state("poet") == before
