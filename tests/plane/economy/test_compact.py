"""History compaction: old large tool results go in batches, the recent
turns never, and what went stays retrievable."""

import itertools
import re

from plane.config import SessionConfig
from plane.economy.compaction import compact
from plane.providers.base import ChatMessage, ToolCall
from plane.wire.protocol import Usage

ON = SessionConfig(
    compact_enabled=True,
    compact_keep_last_n_turns=2,
    compact_min_chars=100,
    compact_trigger_chars=500,
)


def session(turns: int, result_chars: int) -> list[ChatMessage]:
    history = []
    for n in range(turns):
        call = ToolCall(f"c{n}", "run_command", "{}")
        history += [
            ChatMessage("user", f"task {n}"),
            ChatMessage("assistant", "", (call,)),
            ChatMessage("tool", f"line {n}\n" * (result_chars // 7), tool_call_id=f"c{n}"),
            ChatMessage("assistant", f"done {n}"),
        ]
    return history


def test_nothing_happens_until_old_results_add_up_to_the_trigger():
    assert compact(session(3, 200), ON) is None  # one old result of 200 chars
    assert compact(session(9, 200), SessionConfig()) is None  # off by default


def test_a_batch_replaces_every_old_large_result_and_spares_the_recent_turns():
    history = session(10, 4000)
    result = compact(history, ON)
    assert result is not None
    tools = [m.content for m in result.history if m.role == "tool"]
    assert all(t.startswith("[old tool result compacted: ") for t in tools[:8])
    assert tools[8:] == [m.content for m in history if m.role == "tool"][8:]
    assert [m.role for m in result.history] == [m.role for m in history]
    for ref, text in result.removed.items():
        assert any(f"ref:{ref}]" in t for t in tools) and text.startswith("line ")
    assert result.saved_chars == sum(map(len, result.removed.values())) - sum(
        len(t) for t in tools[:8]
    )


def test_a_batch_waits_until_what_it_saves_outweighs_the_cache_it_rewrites():
    """Four old results of 4,000 chars are far over the trigger, but taking them out
    means sending the two recent turns (8,000 chars) again uncached and writing them to
    the cache anew (1.15× more than reading them), for 0.1× of 15,700 chars on each of
    the four calls to come: it would cost more than it saves. Eight old results pay."""
    assert compact(session(6, 4000), ON) is None
    assert compact(session(10, 4000), ON) is not None


def test_the_more_calls_the_recent_turns_made_the_sooner_a_batch_pays():
    """The calls to come are reckoned by the recent turns': a turn of many calls reads a
    result it keeps many times over, so the same old results pay sooner."""
    busy = session(6, 4000)
    for turn_start in [i for i, m in enumerate(busy) if m.role == "user"][-2:][::-1]:
        calls = [ChatMessage("assistant", f"checking {k}") for k in range(6)]
        busy[turn_start + 1 : turn_start + 1] = calls
    assert compact(session(6, 4000), ON) is None
    assert compact(busy, ON) is not None


def test_a_compacted_history_stays_put_until_the_next_batch():
    once = compact(session(10, 4000), ON)
    assert once is not None
    assert compact(once.history, ON) is None, "markers are not compacted again"
    grown = once.history + session(2, 4000)
    assert compact(grown, ON) is None, "two new old results do not pay for a rewrite"


async def test_in_a_running_plane_the_prompt_shrinks_when_it_pays_and_the_prefix_holds(start_plane):
    from tests.support.fixtures_plane import CONFIG

    config = CONFIG + (
        "session:\n  compact_enabled: true\n  compact_keep_last_n_turns: 1\n"
        "  compact_min_chars: 200\n  compact_trigger_chars: 1500\n"
    )
    plane = await start_plane(config)
    big = "head -c 9000 /dev/urandom | base64"  # nothing for tool-output compression to fold
    sizes = []
    for n in range(6):
        command = big if n < 3 else "echo done"
        plane.llm.reply("", tool_calls=[("run_command", {"command": command})], usage=Usage())
        plane.llm.reply(f"done {n}", usage=Usage())
        await plane.turn("demo", f"task {n}")
        sizes.append(len(str(plane.llm.requests[-2]["messages"])))
    first_calls = [r["messages"] for r in plane.llm.requests[::2]]
    breaks = sum(
        after[: len(before) - 1] != before[:-1] for before, after in itertools.pairwise(first_calls)
    )
    markers = [len(re.findall(r"old tool result compacted", str(m))) for m in first_calls]
    # At turn 3 the two old results would have meant rewriting the big turn 2 for the
    # one call to come; at turn 4 all three go, the turn after them small: one batch.
    assert breaks == 1 and markers == [0, 0, 0, 0, 3, 3], "one batch, when it pays"
    assert sizes[-1] < max(sizes) / 5, "the prompt is less than a fifth of what it was"
    [ref, *_] = re.findall(r"ref:(k_[A-Za-z0-9_-]{10})\]", str(first_calls[-1]))
    assert plane.services.refs.get(ref).startswith("$ head -c 9000 /dev/urandom | base64\n")


async def test_with_compression_off_a_compacted_result_is_still_retrievable(start_plane):
    """The marker says `retrieve ref:…`: with `compression: {enabled: false}` that
    is still true, for the agent as for the user, and tool output is still sent whole."""
    from tests.support.fixtures_plane import CONFIG

    config = CONFIG + (
        "compression:\n  enabled: false\n"
        "session:\n  compact_enabled: true\n  compact_keep_last_n_turns: 1\n"
        "  compact_min_chars: 200\n  compact_trigger_chars: 1500\n"
    )
    plane = await start_plane(config)
    listing = "seq 1 2000"  # what compression would fold, were it on
    for n in range(5):
        command = listing if n < 3 else "echo done"
        plane.llm.reply("", tool_calls=[("run_command", {"command": command})], usage=Usage())
        plane.llm.reply(f"done {n}", usage=Usage())
        await plane.turn("demo", f"task {n}")
    sent = str(plane.llm.requests[-2]["messages"])
    [ref, *_] = re.findall(r"ref:(k_[A-Za-z0-9_-]{10})\]", sent)
    assert "1999\\n2000" in str(plane.llm.requests[1]["messages"]), "sent whole"
    plane.llm.reply("", tool_calls=[("retrieve", {"ref": ref, "lines": "2:3"})], usage=Usage())
    plane.llm.reply("got it", usage=Usage())
    await plane.turn("demo", "what did the first command say?")
    assert plane.llm.requests[-1]["messages"][-1]["content"] == "1\n2"
