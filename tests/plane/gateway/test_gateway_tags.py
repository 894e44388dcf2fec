"""Tags and sessions on gateway calls: what a call carries is kept with it;
a tag with a ceiling refuses its calls past it, in the client's own error
shape, with the tag named, whichever agent makes them; and the tool results
inside a client's request are what its cost is attributed to, by the names
the client gave."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import TYPE_CHECKING

import pytest

from plane.wire.protocol import Usage
from tests.support.command import plane_cli_async
from tests.support.fixtures_gateway import CONFIG, StartGateway
from tests.support.scripted_llm import Reply
from tests.support.sdks import ON_ONE_WORKER, anthropic, anthropic_sdk, openai, openai_sdk

if TYPE_CHECKING:
    from anthropic.types import MessageParam
    from openai.types.chat import (
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionMessageParam,
    )

pytestmark = [pytest.mark.timeout(30), ON_ONE_WORKER]

HELLO: list[MessageParam] = [{"role": "user", "content": "hello"}]
HELLO_CHAT: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hello"}]
TAGGED = CONFIG + "tags:\n  ticket-123: {limitUsd: 0.3}\n"
TENTH = Usage(input_tokens=90, output_tokens=5)
"""$0.10 at the test prices."""


def claude(gw, **headers: str) -> anthropic.AsyncAnthropic:
    return anthropic_sdk(
        base_url=gw.url, api_key=gw.keys["claude"], max_retries=0, default_headers=headers
    )


def aider(gw, **headers: str) -> openai.AsyncOpenAI:
    return openai_sdk(
        base_url=f"{gw.url}/v1", api_key=gw.keys["aider"], max_retries=0, default_headers=headers
    )


async def tags_and_sessions(gw) -> list[tuple[str, str | None, str | None]]:
    rows = await gw.db.fetchall("SELECT agent, tag, session FROM calls ORDER BY id")
    return [tuple(row) for row in rows]


async def test_what_a_call_carries_is_kept_with_it(start_gateway: StartGateway) -> None:
    gw = await start_gateway()
    gw.llm.default_reply = Reply("ok", TENTH)
    claude_code_id = json.dumps({"device_id": "d", "account_uuid": "", "session_id": "cc-42"})
    async with claude(gw, **{"x-plane-tag": "ticket-9"}) as client:
        await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
    async with claude(gw) as client:
        await client.messages.create(
            model="scripted-model", max_tokens=10, messages=HELLO,
            metadata={"user_id": claude_code_id},
        )  # fmt: skip
        await client.messages.create(
            model="scripted-model", max_tokens=10, messages=HELLO,
            metadata={"user_id": "user_ab12_account__session_0f-1"},
        )  # fmt: skip
        await client.messages.create(
            model="scripted-model", max_tokens=10, messages=HELLO, metadata={"user_id": "alice"}
        )
    async with aider(gw, **{"x-claude-code-session-id": "hdr-1"}) as client:
        await client.chat.completions.create(
            model="scripted-model",
            messages=HELLO_CHAT,
            max_tokens=10,
            user="team-7",
        )
        await client.chat.completions.create(
            model="scripted-model",
            messages=HELLO_CHAT,
            max_tokens=10,
            user="not a tag!",
        )
    assert await tags_and_sessions(gw) == [
        ("claude", "ticket-9", None),
        ("claude", None, "cc-42"),  # Claude Code's id names its session, never a tag
        ("claude", None, "0f-1"),
        ("claude", "alice", None),
        ("aider", "team-7", "hdr-1"),
        ("aider", None, "hdr-1"),  # metadata that is not a tag is left out
    ]
    lines = [m.text for m in await gw.said("aider") if m.kind == "cost"]
    assert lines[0].endswith(" · tag team-7 · session hdr-1")
    day = gw.clock.now().date().isoformat()  # the plane's day, not this machine's
    summary = ("ledger", "--summary", "--day", day, "--by", "tag", "--json")
    out = await plane_cli_async(gw.home.root, *summary)
    by_tag = json.loads(out.stdout)
    assert {g["tag"] for g in by_tag["groups"]} == {"ticket-9", "alice", "team-7", "(none)"}


async def test_a_bad_tag_header_is_refused_in_one_line_and_nothing_is_spent(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    async with aider(gw, **{"x-plane-tag": "a tag with spaces"}) as client:
        with pytest.raises(openai.BadRequestError) as refused:
            await client.chat.completions.create(
                model="scripted-model",
                messages=HELLO_CHAT,
                max_tokens=10,
            )
    assert "x-plane-tag: 'a tag with spaces' is not a tag (1–64 characters" in str(refused.value)
    assert gw.llm.requests == [] and await gw.entries() == []


async def test_a_tags_ceiling_refuses_its_calls_whichever_agent_makes_them(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway(TAGGED)
    gw.llm.default_reply = Reply("ok", TENTH)
    tag = {"x-plane-tag": "ticket-123"}
    async with claude(gw, **tag) as c, aider(gw, **tag) as a:
        await c.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
        await a.chat.completions.create(model="scripted-model", messages=HELLO_CHAT, max_tokens=10)
        await c.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
        sent = len(gw.llm.requests)
        with pytest.raises(anthropic.RateLimitError) as held:  # Claude Code's shape: 429
            await c.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
        with pytest.raises(openai.BadRequestError) as also:  # Chat Completions': 400
            await a.chat.completions.create(
                model="scripted-model", messages=HELLO_CHAT, max_tokens=10
            )
    assert len(gw.llm.requests) == sent, "nothing past the tag's ceiling was sent"
    sentence = (
        "claude is not answering this call: calls tagged ticket-123 have spent $0.30 of $0.30 "
        "today; calls with the tag go again at 00:00 UTC, in 12h 00m, or when its ceiling "
        "(tags: in agents.yaml) is raised."
    )
    assert sentence in str(held.value)
    assert held.value.response.headers["retry-after"] == str(12 * 3600)
    assert "aider is not answering this call: calls tagged ticket-123" in str(also.value)
    async with claude(gw) as client:  # untagged: the agent is not held
        await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
    assert (await gw.rows.state("claude")).status != "held"
    said = [m.text for m in await gw.said("claude") if m.kind == "plane"]
    assert said.count(sentence) == 1, "said once, as a hold is"


async def test_a_tag_with_a_ceiling_on_a_model_with_no_price_is_refused(
    start_gateway: StartGateway,
) -> None:
    unpriced = TAGGED.replace("  scripted-model:\n    {input", "  other:\n    {input")
    gw = await start_gateway(unpriced)
    async with aider(gw, **{"x-plane-tag": "ticket-123"}) as client:
        with pytest.raises(openai.BadRequestError, match="no price is known for scripted-model"):
            await client.chat.completions.create(
                model="scripted-model",
                messages=HELLO_CHAT,
                max_tokens=10,
            )
    assert gw.llm.requests == []


async def test_a_clients_tool_results_are_attributed_by_the_names_it_gave(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    usage = Usage(input_tokens=2000, cache_read_tokens=1000, output_tokens=5)
    gw.llm.default_reply = Reply("ok", usage)
    messages: list[MessageParam] = [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
            {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "a.py"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "a.py\n" * 300},
            {"type": "tool_result", "tool_use_id": "t2",
             "content": [{"type": "text", "text": "x = 1\n" * 50}]},
        ]},
    ]  # fmt: skip
    async with claude(gw) as client:
        await client.messages.create(model="scripted-model", max_tokens=10, messages=messages)
    chat: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "done\n" * 100},
        {"role": "tool", "tool_call_id": "unknown", "content": "?"},
    ]  # fmt: skip
    async with aider(gw) as client:
        await client.chat.completions.create(model="scripted-model", messages=chat, max_tokens=10)
    rows = await gw.db.fetchall(
        "SELECT agent, part, tool, call_parts.cost_usd FROM call_parts"
        " JOIN calls ON calls.id = call"
    )
    tools = {(row["agent"], row["tool"]) for row in rows if row["part"] == "tool"}
    assert tools == {("claude", "Bash"), ("claude", "Read"), ("aider", "shell"), ("aider", None)}
    for entry in await gw.entries():
        parts = [Decimal(r["cost_usd"]) for r in rows if r["agent"] == entry.agent]
        assert sum(parts) == entry.cost_usd, "each call's parts add up to its cost"


async def test_the_day_by_tool_keeps_ten_bars_whatever_tools_a_client_names(
    start_gateway: StartGateway,
) -> None:
    from plane.money.charts import spend_history

    gw = await start_gateway()
    gw.llm.default_reply = Reply("ok", Usage(input_tokens=3000, output_tokens=5))
    chat: list[ChatCompletionMessageParam] = [{"role": "user", "content": "go"}]
    for n in range(15):
        call: ChatCompletionMessageFunctionToolCallParam = {
            "id": f"c{n}",
            "type": "function",
            "function": {"name": f"t{n}", "arguments": "{}"},
        }
        chat.append({"role": "assistant", "content": None, "tool_calls": [call]})
        chat.append({"role": "tool", "tool_call_id": f"c{n}", "content": "x" * (100 + n)})
    async with aider(gw) as client:
        await client.chat.completions.create(model="scripted-model", messages=chat, max_tokens=10)
    history = await spend_history(gw.db, gw.services.ledger, None, 1)
    assert len(history.tools) == 10
    assert history.tools[-1].label.startswith("others (")
    [entry] = await gw.entries()
    assert sum(p.spent_usd for p in history.tools) == entry.cost_usd
