"""The loop guard attacked by an agent that repeats itself in disguise: the
same tool call with its arguments spaced or ordered differently each time is
the same call (README "Guard rails": the same tool call with the same result
again and again is held long before the ceiling)."""

from __future__ import annotations

from plane.wire.protocol import Usage

CENT = Usage(input_tokens=10)
"""$0.01 at the scripted price ($0.001 a token)."""
DISGUISES = [
    '{"path":"a.txt"}',
    '{"path": "a.txt"}',
    '{ "path": "a.txt" }',
    '{"path":  "a.txt"}',
    '{\n  "path": "a.txt"\n}',
    '{"path" : "a.txt"}',
    '{"path":"a.txt" }',
    '{ "path":"a.txt"}',
]


async def test_the_same_call_spaced_differently_each_time_is_held_at_the_fifth(start_plane):
    plane = await start_plane()
    workspace = plane.services.roster.get("demo").workspace
    workspace.mkdir(parents=True, exist_ok=True)  # made by its first turn: not yet
    (workspace / "a.txt").write_text("the same\n")
    for arguments in DISGUISES:
        plane.llm.reply("", tool_calls=[("read_file", arguments)], usage=CENT)
    plane.llm.reply("Done.", usage=CENT)
    await plane.turn("demo", "read a.txt")
    await plane.quiet()
    history = await plane.services.conversation.history("demo", 50)
    assert history[-1].text.startswith(
        'demo is held: it called read_file {"path": "a.txt"} 5 times in a row with the same '
        "result; those calls cost $0.05 since 12:00 UTC."
    ), history[-1].text
    assert len(plane.llm.requests) == 5
    assert [m.kind for m in history].count("tool") == 1, "a repeat in a turn is not run again"


def test_a_gateway_client_whose_calls_are_respaced_each_time_is_a_tool_loop():
    """OpenAI Chat carries a call's arguments as the model wrote them."""
    from datetime import UTC, datetime, timedelta
    from decimal import Decimal
    from typing import Any

    from plane.agents.guard import Guard
    from plane.config import GuardConfig
    from plane.gateway.repeats import chat_look

    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    guard, found = Guard(GuardConfig()), []
    for n, arguments in enumerate(DISGUISES):
        function = {"name": "cat", "arguments": arguments}
        call = {"id": f"c{n}", "type": "function", "function": function}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "the same"})
        at = datetime(2026, 11, 29, 12, tzinfo=UTC) + timedelta(seconds=n)
        loop = guard.step(chat_look({"model": "m", "messages": messages}).step(Decimal("0.01"), at))
        found.append(None if loop is None else (loop.kind, loop.times, loop.what))
    assert found[4] == ("tool", 5, ('cat {"path": "a.txt"}',))


async def test_a_file_read_again_after_it_was_written_is_read_again(start_plane):
    """The converse, an honest turn: read, fix, read again. What changed in
    between makes the second read no repeat: it is run, and the model reads
    the file as it is now."""
    plane = await start_plane()
    workspace = plane.services.roster.get("demo").workspace
    workspace.mkdir(parents=True, exist_ok=True)  # made by its first turn: not yet
    (workspace / "a.txt").write_text("broken\n")
    plane.llm.reply("", tool_calls=[("read_file", {"path": "a.txt"})], usage=CENT)
    plane.llm.reply("", tool_calls=[("write_file", {"path": "a.txt", "content": "fixed\n"})])
    plane.llm.reply("", tool_calls=[("read_file", {"path": "a.txt"})], usage=CENT)
    plane.llm.reply("Fixed.", usage=CENT)
    said = await plane.turn("demo", "fix a.txt")
    assert [m.text for m in said if m.kind == "agent"] == ["Fixed."]
    last = plane.llm.requests[-1]
    results = [m["content"] for m in last["messages"] if m["role"] == "tool"]
    assert len(results) == 3 and "fixed" in results[2], results
    assert "tools" in last, "nothing repeated: it may go on working"


async def test_a_booking_made_twice_at_once_is_still_one_repeat(start_plane):
    """Only what may have changed in between makes a call no repeat: the
    same booking asked twice in a row is booked once."""
    plane = await start_plane()
    book = ("schedule_turn", {"in_seconds": 1800, "note": "check the build"})
    plane.llm.reply("", tool_calls=[book], usage=CENT)
    plane.llm.reply("", tool_calls=[book], usage=CENT)
    plane.llm.reply("Booked.", usage=CENT)
    said = await plane.turn("demo", "check the build in half an hour")
    assert [m.text for m in said if m.kind == "agent"] == ["Booked."]
    assert [m.kind for m in said].count("tool") == 1
    assert len(await plane.scheduler.open("demo")) == 1
