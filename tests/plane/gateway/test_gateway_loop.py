"""The loop guard on gateway agents, with the official SDKs as clients: a
client that resends the same request, or calls the same tool and gets the
same result in request after request, is held (its next calls refused with
the sentence, said once in its conversation; its row held for `loop`)
until the operator resumes it; honest sessions of the same length are not."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import TYPE_CHECKING

import pytest

from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_gateway import CONFIG, GatewayPlane, StartGateway
from tests.support.gateway_sessions import HONEST_READS, chat_with_reads
from tests.support.scripted_llm import Reply
from tests.support.sdk_replies import text_of
from tests.support.sdks import ON_ONE_WORKER, anthropic, anthropic_sdk, openai, openai_sdk

if TYPE_CHECKING:
    from anthropic.types import MessageParam
    from openai.types.chat import (
        ChatCompletionMessageParam,
    )

pytestmark = [pytest.mark.timeout(60), ON_ONE_WORKER]

CENT = Usage(input_tokens=10)
"""$0.01 at the scripted price."""
HELLO: list[MessageParam] = [
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": "Hello. What shall I look at?"},
    {"role": "user", "content": "the open issues"},
]
"""A conversation under way: sent again and again, a client going round."""
HELLO_CHAT: list[ChatCompletionMessageParam] = [
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": "Hello. What shall I look at?"},
    {"role": "user", "content": "the open issues"},
]
"""The same, as Chat Completions takes it."""
RESENT = (
    "claude is held: its client sent the same request 5 times in a row; those calls cost "
    "$0.05 since 12:00 UTC. It stays held until the operator resumes it (p in the TUI, "
    "`plane resume claude`), which lets it go on."
)


def anthropic_client(gw: GatewayPlane) -> anthropic.AsyncAnthropic:
    return anthropic_sdk(base_url=gw.url, api_key=gw.keys["claude"], max_retries=0)


def openai_client(gw: GatewayPlane) -> openai.AsyncOpenAI:
    return openai_sdk(base_url=f"{gw.url}/v1", api_key=gw.keys["aider"], max_retries=0)


async def test_a_client_resending_the_same_request_is_held_and_resume_lets_it_go_on(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    for _ in range(8):
        gw.llm.reply("the same", usage=CENT)
    async with anthropic_client(gw) as client:
        for n in range(5):  # metadata moves between sends: still the same request
            await client.messages.create(
                model="scripted-model",
                max_tokens=10,
                messages=HELLO,
                metadata={"user_id": f"session-{n}"},
            )
        with pytest.raises(anthropic.RateLimitError) as refused:
            await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
        assert RESENT in str(refused.value)
        # No day's end lifts a loop's hold: the client is told to wait long, and stops.
        assert refused.value.response.headers["retry-after"] == "3600"
        assert len(gw.llm.requests) == 5, "the refused call never reached the provider"
        said = [m.text for m in await gw.said("claude") if m.kind == "plane"]
        assert said == [RESENT], "said once, whatever was refused after"
        state = await gw.rows.state("claude")
        assert (state.status, state.hold_reason) == ("held", "loop")

        reply = await gw.runtime.api.handle(p.PauseAgent(agent="claude", paused=False))
        assert reply.agent.status != "held"
        answer = await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
        assert text_of(answer) == "the same"
    said = [m.text for m in await gw.said("claude") if m.kind == "plane"]
    assert said[-1] == (
        "Resumed by the operator: the loop guard's hold is lifted and its count starts "
        "afresh; its client's calls go through again."
    )


async def test_a_conversation_opened_with_the_same_question_each_run_is_never_held(
    start_gateway: StartGateway,
) -> None:
    """A script or a schedule (`claude -p "…"` every ten minutes) opens a new
    session with the same first request each run: not a loop, however often."""
    gw = await start_gateway()
    for _ in range(12):
        gw.llm.reply("the same", usage=CENT)
    async with anthropic_client(gw) as client:
        for _ in range(12):
            await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO[:1])
    assert len(gw.llm.requests) == 12
    assert (await gw.rows.state("claude")).status != "held"


async def test_the_same_tool_result_in_request_after_request_is_held(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    for _ in range(8):
        gw.llm.reply("", tool_calls=[("read_file", {"path": "a.py"})], usage=CENT)
    async with openai_client(gw) as client:
        for n in range(1, 6):
            await client.chat.completions.create(
                model="scripted-model", messages=chat_with_reads([("a.py", "x = 1")] * n)
            )
        with pytest.raises(openai.BadRequestError) as refused:
            await client.chat.completions.create(
                model="scripted-model", messages=chat_with_reads([("a.py", "x = 1")] * 6)
            )
    assert (
        'aider is held: it called read_file {"path": "a.py"} 5 times in a row with the same '
        "result; those calls cost $0.05 since 12:00 UTC."
    ) in str(refused.value)
    assert refused.value.code == "agent_held_in_loop", "not the ceiling's code: a loop's"
    assert (await gw.rows.state("aider")).hold_reason == "loop"


async def test_an_honest_session_that_reads_many_files_and_fixes_tests_is_never_held(
    start_gateway: StartGateway,
) -> None:
    """Forty calls: reading twenty files (some twice, unchanged), then a
    test-fix cycle whose output is alike but changes each time."""
    gw = await start_gateway()
    gw.llm.default_reply = Reply("ok", CENT)
    reads = HONEST_READS
    async with openai_client(gw) as client:
        for n in range(1, len(reads) + 1):
            await client.chat.completions.create(
                model="scripted-model", messages=chat_with_reads(reads[:n])
            )
    assert (await gw.rows.state("aider")).status != "held"


async def test_a_resend_after_the_provider_failed_is_not_a_repeat(
    start_gateway: StartGateway,
) -> None:
    """A call the provider refused bought nothing: the client's retry is the
    call, not its repeat."""
    gw = await start_gateway()
    for _ in range(6):
        gw.llm.fault(529)
    async with anthropic_client(gw) as client:
        for _ in range(6):
            with pytest.raises(anthropic.APIStatusError):
                await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
        gw.llm.reply("at last", usage=CENT)
        await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
    assert (await gw.rows.state("claude")).status != "held"


async def test_guard_off_for_a_gateway_agent_never_holds_it(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway(
        CONFIG.replace(
            "claude: {provider: scripted-anthropic, gateway: {}}",
            "claude: {provider: scripted-anthropic, gateway: {}, guard: off}",
        )
    )
    gw.llm.default_reply = Reply("the same", CENT)
    async with anthropic_client(gw) as client:
        for _ in range(8):
            await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
    assert (await gw.rows.state("claude")).status != "held"


async def test_the_same_request_sent_many_times_at_once_is_a_fan_out_not_a_loop(
    start_gateway: StartGateway,
) -> None:
    """Calls that ran at the same time are not one conversation going round:
    five rounds of eight identical calls at once hold nothing."""
    gw = await start_gateway()
    gw.llm.default_reply = Reply("ok", CENT, delay_s=0.1)
    async with anthropic_client(gw) as client:
        for _ in range(5):
            await asyncio.gather(
                *(
                    client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
                    for _ in range(8)
                )
            )
    assert (await gw.rows.state("claude")).status != "held"
    assert len(gw.llm.requests) == 40


STEPPING = CONFIG.replace(
    "models: [scripted-model]\n    max_retries: 0\n  scripted-anthropic",
    "models: [scripted-model, other-model]\n    max_retries: 0\n  scripted-anthropic",
).replace("pricing:\n", "pricing:\n  other-model: {input: 100, output: 200}\n")

AIDER_STEPS_DOWN = STEPPING.replace(
    "aider: {provider: scripted, gateway: {}}",
    "aider: {provider: scripted, gateway: {}, fallback: {at: 0.5, model: other-model}}",
)
"""`STEPPING`, with aider's own fallback to other-model at half its ceiling."""


async def test_a_gateway_agent_steps_down_only_when_its_block_says_and_says_which_model_answered(
    start_gateway: StartGateway,
) -> None:
    config = AIDER_STEPS_DOWN.replace(
        "defaults:\n", "defaults:\n  fallback: {at: 0.1, model: other-model}\n"
    )
    gw = await start_gateway(config)
    await gw.services.gate.ceilings.set("aider", Decimal(1))
    await gw.services.gate.ceilings.set("claude", Decimal(5))
    gw.llm.default_reply = Reply("ok", Usage(input_tokens=600))
    async with openai_client(gw) as client:
        first = await client.chat.completions.create(
            model="scripted-model", max_tokens=10, messages=HELLO_CHAT
        )
        second = await client.chat.completions.create(
            model="scripted-model",
            max_tokens=10,
            messages=[*HELLO_CHAT[:1], {"role": "user", "content": "again"}],
        )
        third = await client.chat.completions.create(
            model="scripted-model",
            max_tokens=10,
            messages=[*HELLO_CHAT[:1], {"role": "user", "content": "more"}],
        )
    assert [first.model, second.model, third.model] == [
        "scripted-model",
        "other-model",
        "other-model",
    ]
    assert [r["model"] for r in gw.llm.requests] == ["scripted-model", "other-model", "other-model"]
    said = [m.text for m in await gw.said("aider")]
    assert (
        said.count(
            "aider switched to other-model at $0.60 of $1.00 today (fallback at 50%); "
            "it goes back at 00:00 UTC."
        )
        == 1
    )
    assert [line.split(" · ")[0] for line in said if " in · " in line] == [
        "scripted-model",
        "other-model",
        "other-model",
    ]
    row = await gw.rows.state("aider")
    assert (row.model, row.stepped_down_from) == ("other-model", "scripted-model")

    # claude names no fallback of its own: the defaults' is not its (off by default).
    async with anthropic_client(gw) as client:
        for n in range(3):
            ask: list[MessageParam] = [{"role": "user", "content": f"q {n}"}]
            await client.messages.create(model="scripted-model", max_tokens=10, messages=ask)
    assert [r["model"] for r in gw.llm.requests[3:]] == ["scripted-model"] * 3


async def test_a_gateway_agent_back_on_its_model_the_same_day_is_said_once(
    start_gateway: StartGateway,
) -> None:
    """Stepped down, then its ceiling raised: its next calls go to the model
    its client named, said once in its conversation, not once a call."""
    gw = await start_gateway(AIDER_STEPS_DOWN)
    await gw.services.gate.ceilings.set("aider", Decimal(1))
    gw.llm.default_reply = Reply("ok", Usage(input_tokens=600))
    async with openai_client(gw) as client:
        for n in range(4):
            if n == 2:
                await gw.services.gate.ceilings.set("aider", Decimal(10))
            await client.chat.completions.create(
                model="scripted-model",
                max_tokens=10,
                messages=[*HELLO_CHAT[:1], {"role": "user", "content": f"q {n}"}],
            )
    assert [r["model"] for r in gw.llm.requests] == [
        "scripted-model",
        "other-model",
        "scripted-model",
        "scripted-model",
    ]
    said = [m.text for m in await gw.said("aider")]
    back = [text for text in said if text.startswith("aider is back on")]
    assert back == [
        "aider is back on scripted-model: $0.66 of $10.00 today is under its fallback's 50%."
    ]
    row = await gw.rows.state("aider")
    assert (row.model, row.stepped_down_from) == ("scripted-model", None)


async def test_a_gateway_loop_is_a_loop_alert_with_its_figures(
    start_gateway: StartGateway, receiver: Receiver
) -> None:
    gw = await start_gateway(CONFIG + f"notify:\n  webhook: {receiver.url}/hook\n  retries: 0\n")
    gw.llm.default_reply = Reply("the same", CENT)
    async with anthropic_client(gw) as client:
        for _ in range(5):
            await client.messages.create(model="scripted-model", max_tokens=10, messages=HELLO)
    assert gw.runtime.notifier is not None, "notify: is configured"
    await gw.runtime.notifier.drained()
    [alert] = [h for h in receiver.hooks() if h["agent"] == "claude"]
    assert (alert["event"], alert["text"]) == ("loop", RESENT)
    assert (alert["loop"]["kind"], alert["loop"]["times"]) == ("request", 5)
