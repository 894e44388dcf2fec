"""Auto-compact in a running plane: near the context window the history is
saved whole, summarised by the model (a metered call), and replaced; three
failures in a row stop the trying."""

import json
import math
import re

import pytest

from plane.wire.protocol import Usage
from tests.support.fixtures_plane import CONFIG
from tests.support.scripted_llm import Reply, prompt_chars

SMALL_WINDOW = (
    CONFIG.replace("    max_retries: 0\n", "    max_retries: 0\n    context_window: 4096\n")
    + "session:\n  auto_compact: true\n"
)
"""The embedded model's window: the system prompt and the ten tools' schemas (about
1,800 tokens) and two turns of history are near it; one turn is not."""
BIG = "head -c 1500 /dev/urandom | base64"  # nothing for compression to fold


async def work(plane, n):
    plane.llm.reply("", tool_calls=[("run_command", {"command": BIG})], usage=Usage())
    plane.llm.reply(f"done {n}", usage=Usage())
    return await plane.turn("demo", f"task {n}")


def summary_asks(plane):
    return [r for r in plane.llm.requests if "Write nine short sections" in str(r["messages"][-1])]


async def test_near_the_window_the_history_is_saved_summarised_and_replaced(start_plane):
    plane = await start_plane(SMALL_WINDOW)
    for n in range(2):
        await work(plane, n)
    assert summary_asks(plane) == [], "not near the window yet"
    plane.llm.reply("1. Request — run tasks. 9. Next step — task 2.", usage=Usage(input_tokens=5))
    said = await work(plane, 2)

    [ask] = summary_asks(plane)
    before = plane.llm.requests[plane.llm.requests.index(ask) - 1]
    assert len(ask["messages"]) > 8
    # The call before it, extended: its system prompt, tools and history, then the ask.
    assert ask["tools"] == before["tools"] and ask["messages"][0] == before["messages"][0]
    assert ask["messages"][: len(before["messages"])] == before["messages"]
    notice = next(m.text for m in said if m.text.startswith("The history was summarised"))
    saved = plane.services.roster.get("demo").workspace / ".transcripts"
    [path] = saved.glob("transcript_*.jsonl")
    assert str(path) in notice
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["content"] for r in rows if r["role"] == "user"] == ["task 0", "task 1"]
    assert sum(r["role"] == "tool" for r in rows) == 2

    after = plane.llm.requests[-2]["messages"]  # the turn's first call, after the summary
    assert "9. Next step — task 2." in after[1]["content"] and after[-1]["content"] == "task 2"
    assert len(after) == 3  # system, the summary, the new message


async def test_the_summary_names_the_transcript_where_the_agent_can_read_it(start_plane):
    """The model is told where the whole history went; that path, read from its
    workspace as its read_file reads it, is the saved transcript."""
    plane = await start_plane(SMALL_WINDOW)
    for n in range(2):
        await work(plane, n)
    plane.llm.reply("1. Request — run tasks.", usage=Usage(input_tokens=5))
    await work(plane, 2)
    summary = plane.llm.requests[-2]["messages"][1]["content"]
    named = re.search(r"the full transcript is in (\S+?)\.\]", summary)
    assert named is not None, summary
    workspace = plane.services.roster.get("demo").workspace
    assert (workspace / named[1]).is_file(), named[1]


async def test_three_failures_in_a_row_trip_the_breaker(start_plane):
    plane = await start_plane(SMALL_WINDOW)
    for n in range(2):
        await work(plane, n)
    texts = []
    for n in range(2, 6):
        plane.llm.fault(500)  # the summary fails; the turn goes on with the whole history
        said = await work(plane, n)
        texts += [m.text for m in said]
    assert len(summary_asks(plane)) == 3
    assert sum("failed three times in a row" in t for t in texts) == 1


def test_the_reserve_is_13000_tokens_or_a_quarter_of_a_small_window():
    from plane.economy.autocompact import over_budget
    from plane.providers.base import ChatMessage

    history = [ChatMessage("user", "x" * 3500 * 100)]  # ~100,000 tokens
    assert not over_budget("", history, 200_000, 8_000)
    assert over_budget("", history, 120_000, 8_000)  # 120k - 8k - 13k < 100k
    small = [ChatMessage("user", "x" * 3500 * 2)]  # ~2,000 tokens
    assert not over_budget("", small, 4096, 256)  # 4096 - 256 - 1024 = 2816
    assert over_budget("", small * 2, 4096, 256)


def test_recent_files_are_the_last_read_first_each_once():
    from plane.economy.autocompact import recent_files
    from plane.providers.base import ChatMessage, ToolCall

    def read(path):
        call = ToolCall("c", "read_file", json.dumps({"path": path}))
        return ChatMessage("assistant", "", (call,))

    history = [read("a.py"), read("b.py"), read("a.py"), ChatMessage("user", "x"), read("c.md")]
    assert recent_files(history) == ["c.md", "a.py", "b.py"]


@pytest.mark.slow
async def test_the_summary_comes_before_the_prompt_with_its_tools_outgrows_the_window(start_plane):
    """The tools' schemas are part of every prompt (about 2,000 tokens of
    them here, more than a quarter of this window): near the window is
    reckoned with them, so the history is summarised while each call still
    fits, not after a call the provider would refuse as too long."""
    window, max_output = 8000, 512
    config = CONFIG.replace(
        "    max_retries: 0\n", f"    max_retries: 0\n    context_window: {window}\n"
    ).replace("limitUsd: 1\n", "limitUsd: 1000\n") + ("session:\n  auto_compact: true\n")
    plane = await start_plane(config)

    def model(body: dict, number: int) -> Reply:
        last = body["messages"][-1]
        if "Write nine short sections" in str(last["content"]):
            return Reply("1. Request — run tasks.")
        if last["role"] == "tool":
            return Reply("done")
        command = f"{BIG}; echo {number}"  # each a new command: no loop to guard against
        return Reply("", tool_calls=(("run_command", {"command": command}),))

    plane.llm.responder = model
    for n in range(20):
        if summary_asks(plane):
            break
        await plane.turn("demo", f"task {n}")
    [ask] = summary_asks(plane)
    before = plane.llm.requests[: plane.llm.requests.index(ask)]
    tokens = [math.ceil(prompt_chars(body) / 3.5) for body in before]
    assert max(tokens) <= window - max_output, tokens
