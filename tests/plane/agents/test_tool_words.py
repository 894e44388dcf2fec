"""One vocabulary for an agent's tools: `none`, `read-only` and `all` are
words in `plane new` and the new-agent form, so they are words in `plane
edit` and the edit form too (before, `read-only` made an agent and was
"not a tool" when editing one). Real plane, over its socket."""

from __future__ import annotations

import pytest

from plane.agents.toolsets import READ_ONLY
from plane.wire import protocol as p
from tests.plane.agents.test_lifecycle import made, refused


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
        (["rm_rf"], "(or all, read-only, or none)"),
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
