"""`retrieve` under attack: a pattern that backtracks for hours, JSON nested too deep.

`(a+)+$` over a line of forty `a`s and a `!` takes some 2^40 steps. Run in one of
the plane's threads, the regular expression engine would hold the interpreter all
that while: every agent, client and ceiling of the plane frozen, and no interrupt
heard. The pattern runs where it can be stopped, as `grep`'s does. A chunk nested
deeper than Python reads gets the sentence any chunk that is not JSON gets.
"""

from __future__ import annotations

import asyncio

from plane.economy.compress.markers import ref_for
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.processes import running

FREE = Usage()
CHUNK = "\n".join(["a" * 40 + "!"] * 3)
PATTERN = "(a+)+$(?#backtracks for hours)"  # the comment finds its process


async def until(found: bool) -> None:
    """Until a process running the pattern is there (or gone); at most a few seconds."""
    for _ in range(500):
        if bool(running("backtracks for hours")) == found:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the pattern's process {'never started' if found else 'is left'}")


async def test_a_pattern_that_backtracks_for_hours_stops_nothing_else_and_is_cut(start_plane):
    plane = await start_plane()
    ref = ref_for(CHUNK)
    assert plane.services.refs is not None
    plane.services.refs.put({ref: CHUNK})
    plane.llm.reply("", tool_calls=[("retrieve", {"ref": ref, "grep": PATTERN})], usage=FREE)
    subscription = plane.bus.subscribe()
    await plane.send("demo", "find the lines")
    await until(found=True)

    plane.llm.reply("Here.", usage=FREE)  # the scout, while demo's pattern runs
    said = await plane.turn("scout", "anything?")
    assert ("agent", "Here.") in [(m.kind, m.text) for m in said]

    await plane.runtime.api.handle(p.Interrupt(agent="demo"))
    told = await plane.until_turn_ends("demo", subscription)
    assert told[-1].text.startswith("Interrupted by the operator.")
    await until(found=False)


async def test_a_pattern_finds_its_lines_in_what_a_ref_stands_for(start_plane):
    plane = await start_plane()
    chunk = "one\ntwo ERROR\nthree\nfour ERROR é"
    ref = ref_for(chunk)
    assert plane.services.refs is not None
    plane.services.refs.put({ref: chunk})
    for pattern in ("ERROR", "^nothing$"):
        plane.llm.reply("", tool_calls=[("retrieve", {"ref": ref, "grep": pattern})], usage=FREE)
    plane.llm.reply("Found.", usage=FREE)
    await plane.turn("demo", "find the errors")
    results = [m["content"] for m in plane.llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert results == ["2:two ERROR\n4:four ERROR é", "No line matches '^nothing$'."]


async def test_a_pointer_into_json_nested_deeper_than_python_reads_says_what_to_use(start_plane):
    plane = await start_plane()
    chunk = "[" * 5000 + "]" * 5000
    ref = ref_for(chunk)
    assert plane.services.refs is not None
    plane.services.refs.put({ref: chunk})
    plane.llm.reply("", tool_calls=[("retrieve", {"ref": ref, "pointer": "/0"})], usage=FREE)
    plane.llm.reply("I will use lines.", usage=FREE)
    await plane.turn("demo", "read it")
    [result] = [m["content"] for m in plane.llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert result == "This chunk is not JSON on its own; use lines, chars or grep."
