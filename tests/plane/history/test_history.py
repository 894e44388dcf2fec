"""History over the socket, paged back with `before_id`: each page is the
messages just before the oldest one held, oldest first, so the pages put
together are the whole conversation — no gap, nothing twice."""

import pytest

from plane.wire import protocol as p
from plane.wire.client import RequestFailed
from tests.plane.daemon.test_socket import raw

# Each test runs on each engine: the SQLite file, and PostgreSQL.
pytestmark = pytest.mark.usefixtures("each_store")


async def fill(plane, count: int) -> list[p.ConversationMessage]:
    """`count` messages for demo, with scout's between them (ids are shared
    by every agent, so demo's are not consecutive)."""
    said = []
    for n in range(count):
        said.append(await plane.services.conversation.append("demo", "operator", f"m{n}"))
        await plane.services.conversation.append("scout", "operator", f"s{n}")
    return said


async def page(client, **fields) -> list[p.ConversationMessage]:
    reply = await client.request(p.History(agent="demo", **fields))
    assert isinstance(reply, p.HistoryReply)
    return reply.messages


async def test_paging_back_returns_the_previous_page_exactly(start_plane):
    plane = await start_plane()
    said = await fill(plane, 25)
    client = await plane.client()

    newest = await page(client, limit=10)
    assert [m.text for m in newest] == [f"m{n}" for n in range(15, 25)]
    before = await page(client, limit=10, before_id=newest[0].id)
    assert [m.text for m in before] == [f"m{n}" for n in range(5, 15)]
    first = await page(client, limit=10, before_id=before[0].id)
    assert [m.text for m in first] == [f"m{n}" for n in range(5)]  # fewer: the start
    assert await page(client, limit=10, before_id=first[0].id) == []

    assert first + before + newest == said
    assert all(m.agent == "demo" for m in first + before + newest)


async def test_before_an_id_that_is_not_the_agents_is_still_a_clean_cut(start_plane):
    plane = await start_plane()
    said = await fill(plane, 6)
    scouts = await plane.services.conversation.history("scout")
    cut = scouts[2].id  # between demo's m2 and m3
    client = await plane.client()
    assert await page(client, limit=100, before_id=cut) == said[:3]
    assert await page(client, limit=100, before_id=p.MAX_ID) == said


async def test_without_before_id_history_is_what_it_was(start_plane):
    plane = await start_plane()
    said = await fill(plane, 5)
    client = await plane.client()
    assert await page(client) == said
    assert await page(client, limit=2) == said[-2:]


async def test_paging_an_unknown_agent_is_refused(start_plane):
    plane = await start_plane()
    client = await plane.client()
    with pytest.raises(RequestFailed) as caught:
        await client.request(p.History(agent="nobody", before_id=5))
    assert caught.value.error.code == "no_such_agent"


@pytest.mark.parametrize("value", ["0", "-1", '"abc"', "1.5", str(p.MAX_ID + 1), "[1]"])
async def test_a_bad_before_id_gets_one_error_and_changes_nothing(start_plane, value):
    plane = await start_plane()
    await fill(plane, 2)
    say, writer = await raw(plane)
    await say(plane.hello())
    frame = f'{{"type":"history","id":7,"agent":"demo","before_id":{value}}}\n'.encode()
    reply = await say(frame)
    assert isinstance(reply, p.Error) and (reply.code, reply.id) == ("bad_frame", 7)
    assert "before_id" in reply.message
    good = await say(p.encode(p.History(id=8, agent="demo")))
    assert isinstance(good, p.HistoryReply) and len(good.messages) == 2
    writer.close()
