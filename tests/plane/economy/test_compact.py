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
    history = session(8, 200)
    result = compact(history, ON)
    assert result is not None
    tools = [m.content for m in result.history if m.role == "tool"]
    assert all(t.startswith("[old tool result compacted: ") for t in tools[:6])
    assert tools[6:] == [m.content for m in history if m.role == "tool"][6:]
    assert [m.role for m in result.history] == [m.role for m in history]
    for ref, text in result.removed.items():
        assert any(f"ref:{ref}]" in t for t in tools) and text.startswith("line ")
    assert result.saved_chars == sum(map(len, result.removed.values())) - sum(
        len(t) for t in tools[:6]
    )


def test_a_compacted_history_stays_put_until_the_next_batch():
    once = compact(session(8, 200), ON)
    assert compact(once.history, ON) is None, "markers are not compacted again"
    grown = once.history + session(2, 200)
    assert compact(grown, ON) is None, "two new old results are under the trigger"


async def test_in_a_running_plane_the_prompt_shrinks_once_and_the_prefix_holds(start_plane):
    from tests.support.fixtures_plane import CONFIG

    config = CONFIG + (
        "session:\n  compact_enabled: true\n  compact_keep_last_n_turns: 1\n"
        "  compact_min_chars: 200\n  compact_trigger_chars: 1500\n"
    )
    plane = await start_plane(config)
    big = "head -c 900 /dev/urandom | base64"  # nothing for tool-output compression to fold
    sizes = []
    for n in range(6):
        plane.llm.reply("", tool_calls=[("run_command", {"command": big})], usage=Usage())
        plane.llm.reply(f"done {n}", usage=Usage())
        await plane.turn("demo", f"task {n}")
        sizes.append(len(str(plane.llm.requests[-2]["messages"])))
    first_calls = [r["messages"] for r in plane.llm.requests[::2]]
    breaks = sum(
        after[: len(before) - 1] != before[:-1] for before, after in itertools.pairwise(first_calls)
    )
    markers = [len(re.findall(r"old tool result compacted", str(m))) for m in first_calls]
    assert breaks == 2 and markers == [0, 0, 0, 2, 2, 4], "two batches in five turns"
    growth = sizes[1] - sizes[0]
    assert sizes[-1] < (sizes[0] + 5 * growth) / 2, "the prompt is less than half what it was"
    [ref, *_] = re.findall(r"ref:(k_[A-Za-z0-9_-]{10})\]", str(first_calls[-1]))
    assert plane.services.refs.get(ref).startswith("$ head -c 900 /dev/urandom | base64\n")
