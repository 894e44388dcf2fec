"""One operator message, counted over the real socket: one write, one
`MessageAppended`, one `AgentUpdated` for the send itself, and a reply that
carries the stored message's id."""

from __future__ import annotations

from plane.wire import protocol as p


async def events_until(client, done):  # type: ignore[no-untyped-def]
    """The events that arrive before the first one `done` accepts (kept last)."""
    seen: list[p.Event] = []
    async for event in client.events():
        seen.append(event)
        if done(event):
            return seen
    raise AssertionError(f"the stream ended after {seen}")


def of_demo(events: list[p.Event]) -> tuple[list[p.ConversationMessage], list[p.AgentState]]:
    messages = [e.message for e in events if isinstance(e, p.MessageAppended)]
    updates = [e.agent for e in events if isinstance(e, p.AgentUpdated)]
    return (
        [m for m in messages if m.agent == "demo"],
        [a for a in updates if a.name == "demo"],
    )


async def test_a_message_to_an_idle_agent_is_one_event_and_one_row_update_before_its_turn(
    start_plane,
):
    plane = await start_plane()
    plane.llm.reply("later", delay_s=1)  # the turn is held back in the provider
    client = await plane.client()
    await client.request(p.Subscribe())

    sent = await client.request(p.Send(agent="demo", text="hello"))
    before_turn = await events_until(
        client, lambda e: isinstance(e, p.TurnStarted) and e.agent == "demo"
    )

    messages, updates = of_demo(before_turn)
    assert [(m.kind, m.text) for m in messages] == [("operator", "hello")]
    assert len(updates) == 1, f"the row was sent {len(updates)} times before the turn"
    assert (updates[0].status, updates[0].waiting) == ("idle", 1)
    assert isinstance(sent, p.SendReply) and [m.id for m in sent.messages] == [messages[0].id]
    await plane.quiet()


async def test_a_message_to_a_held_agent_is_one_event_and_one_row_update(start_plane):
    """Held at a zero ceiling, told so already: the next message is stored,
    shown once, and its row sent once — the woken worker, finding the same
    hold, sends nothing again."""
    plane = await start_plane()
    await plane.send("demo", "/limit 0")
    await plane.send("demo", "first")  # says why the agent is quiet, once per held spell
    await plane.quiet()
    client = await plane.client()
    await client.request(p.Subscribe())

    sent = await client.request(p.Send(agent="demo", text="second"))
    await plane.quiet()
    await client.request(p.Send(agent="scout", text="/help"))  # a mark: all before it arrived
    seen = await events_until(
        client, lambda e: isinstance(e, p.MessageAppended) and e.message.agent == "scout"
    )

    messages, updates = of_demo(seen)
    assert [(m.kind, m.text, m.held) for m in messages] == [("operator", "second", True)]
    assert len(updates) == 1, f"the row was sent {len(updates)} times for one message"
    assert (updates[0].status, updates[0].waiting) == ("held", 2)
    assert isinstance(sent, p.SendReply) and [m.id for m in sent.messages] == [messages[0].id]
