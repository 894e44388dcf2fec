"""One operator message, counted over the real socket: one write, one
`MessageAppended`, one `AgentUpdated` for the send itself, and a reply that
carries the stored message's id."""

from __future__ import annotations

from plane.wire import protocol as p


async def events_until(client, done):
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


async def test_one_message_through_its_turn_asks_the_gate_and_builds_its_row_counted_times(
    start_plane, monkeypatch
):
    """Counted by wrapping the gate and the row builder, over the real
    socket: the send asks the gate once and builds the row once before its
    reply; the whole message, through its turn, asks the gate 3 times (the
    send, right before the turn under its lock, after it) and builds its row
    4 times (the send, the turn's start, after its call, after its answer)."""
    from plane.agents.crew import Crew
    from plane.agents.rows import Rows
    from plane.money.gate import Gate

    counts = {"gate": 0, "row": 0}
    hold, build, receive = Gate.hold, Rows.row, Crew.receive

    async def counted_hold(self, agent, **kwargs):
        counts["gate"] += agent == "demo"
        return await hold(self, agent, **kwargs)

    def counted_build(self, worker, **kwargs):
        counts["row"] += worker.spec.name == "demo"
        return build(self, worker, **kwargs)

    at_reply: dict[str, int] = {}

    async def received(self, agent, text):
        ran = await receive(self, agent, text)
        at_reply.update(counts)  # the reply is made of what this returns
        return ran

    monkeypatch.setattr(Gate, "hold", counted_hold)
    monkeypatch.setattr(Rows, "row", counted_build)
    monkeypatch.setattr(Crew, "receive", received)
    plane = await start_plane()
    plane.llm.reply("later", delay_s=0.2)
    client = await plane.client()
    await client.request(p.Subscribe())
    counts.update(gate=0, row=0)

    await client.request(p.Send(agent="demo", text="hello"))
    await events_until(client, lambda e: isinstance(e, p.TurnFinished) and e.agent == "demo")
    await plane.quiet()

    assert at_reply == {"gate": 1, "row": 1}, "before the reply"
    assert counts == {"gate": 3, "row": 4}, "the message through its turn"
