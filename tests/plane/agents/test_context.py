"""A message or a turn that does not fit the model's context never jams the
agent: too large to fit even a fresh session, it is refused when sent and
stored nowhere; refused by the provider as too long (llama.cpp's, OpenAI's
real 400s), the turn leaves nothing of itself in the model's history and
says what to do, and the next message is answered."""

from __future__ import annotations

import re

import pytest

from plane.wire import protocol as p
from plane.wire.client import RequestFailed
from plane.wire.protocol import Usage
from tests.support.fixtures_plane import CONFIG

SMALL = CONFIG.replace("    max_retries: 0\n", "    max_retries: 0\n    context_window: 4000\n")
"""The scripted provider with a small model's context (the embedded one holds 4,096)."""
assert SMALL != CONFIG

PASTE = "2026-11-29 12:00:01 worker[311]: INFO request served in 12 ms\n" * 330
"""A pasted log of ~20,000 characters: ~5,800 tokens at the plane's estimate."""

LLAMA_CPP = {
    "error": {
        "code": 400,
        "message": "request (5120 tokens) exceeds the available context size (4096 tokens), "
        "try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 5120,
        "n_ctx": 4096,
    }
}
OPENAI = {
    "error": {
        "message": "This model's maximum context length is 4096 tokens. However, your messages "
        "resulted in 5120 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
CENT = Usage(input_tokens=10)


def contents(request: dict) -> str:
    return "\n".join(str(m.get("content")) for m in request["messages"])


async def test_a_message_larger_than_the_context_is_refused_when_sent_and_stored_nowhere(
    start_plane,
):
    plane = await start_plane(SMALL)
    client = await plane.client()
    with pytest.raises(RequestFailed) as caught:
        await client.request(p.Send(agent="demo", text=PASTE))
    assert caught.value.code == "invalid"
    assert caught.value.error.message == (
        f"Not sent: this message ({len(PASTE):,} characters, about 5.8k tokens) is more than "
        "scripted-model can read at once: its context holds 4,000 tokens, of which about "
        "1.8k are left for a message once the prompt and the answer's room are counted. "
        "Shorten it, or send it in parts."
    )
    await plane.quiet()
    assert await plane.services.conversation.history("demo") == []
    assert await plane.services.transcript.load("demo") == []
    assert plane.llm.requests == [], "nothing reached the model"

    plane.llm.reply("Short is fine.", usage=CENT)
    said = await plane.turn("demo", PASTE[:3000])
    assert said[-2].text == "Short is fine."


async def test_a_message_that_fits_is_not_refused_on_a_large_context(start_plane):
    plane = await start_plane()  # 128,000 tokens: the same paste fits
    plane.llm.reply("Read it.", usage=CENT)
    said = await plane.turn("demo", PASTE)
    assert said[0].text == PASTE and said[-2].text == "Read it."


@pytest.mark.parametrize("body", [LLAMA_CPP, OPENAI], ids=["llama.cpp", "openai"])
async def test_a_turn_refused_as_too_long_keeps_nothing_and_the_next_one_is_answered(
    start_plane, body
):
    plane = await start_plane(SMALL)
    plane.llm.fault(400, body=body)
    said = await plane.turn("demo", "the oversized question")

    [notice] = [m for m in said if m.kind == "plane"]
    assert notice.text == (
        "The turn stopped: what demo would read is more than scripted-model's context holds "
        "(4,000 tokens), so this turn is left out of its history and nothing was charged. "
        "Send a shorter message, or the same one in parts."
    )
    assert [m.kind for m in said] == ["operator", "plane"], "no `$0.00 · 0 in · 0 out` line"
    assert await plane.services.transcript.load("demo") == []
    [entry] = await plane.services.ledger.entries(plane.clock.now().date())
    assert (entry.status, entry.cost_usd) == ("failed", 0)

    plane.llm.reply("Answered.", usage=CENT)
    said = await plane.turn("demo", "a small question")
    assert said[-2].text == "Answered."
    assert "oversized" not in contents(plane.llm.requests[-1])


async def test_a_role_too_long_for_the_context_is_named_not_the_message(start_plane):
    """A system prompt pasted from a larger model's set-up fills the whole
    context: "Send a shorter message" would be advice that cannot work, as
    every message, "hi" too, fails the same way."""
    plane = await start_plane(SMALL)
    client = await plane.client()
    role = "Follow the house style guide to the letter. " * 500  # ~22,000 characters
    await client.request(p.NewAgent(name="styled", model="scripted-model", role=role, tools="none"))
    plane.llm.fault(400, body=LLAMA_CPP)
    said = await plane.turn("styled", "hi")
    [notice] = [m for m in said if m.kind == "plane"]
    assert notice.text == (
        "The turn stopped: what styled would read is more than scripted-model's context holds "
        "(4,000 tokens), so this turn is left out of its history and nothing was charged. "
        "Its role and tools alone come to about 6.4k tokens, which leaves no room for a "
        "message: shorten its role, or give it fewer tools (`plane edit styled`, or e in the "
        "agent list)."
    )


async def test_a_history_grown_too_long_starts_a_new_session_so_the_next_turn_is_answered(
    start_plane,
):
    """A history the model can no longer read would fail every turn after it:
    the plane saves it and starts a new session itself, as /new does."""
    plane = await start_plane(SMALL)
    plane.llm.reply("First answer.", usage=CENT)
    await plane.turn("demo", "first question")
    plane.llm.fault(400, body=LLAMA_CPP)
    said = await plane.turn("demo", "second question")
    [notice] = [m for m in said if m.kind == "plane"]
    assert re.search(
        r"The plane started a new session, as /new does \(the 2 messages of the history are "
        r"saved in \.transcripts/[^)]+\): send it again\.$",
        notice.text,
    ), notice.text
    assert await plane.services.transcript.load("demo") == []
    saved = list((plane.services.roster.get("demo").workspace / ".transcripts").iterdir())
    assert len(saved) == 1 and "first question" in saved[0].read_text()

    plane.llm.reply("Fresh.", usage=CENT)
    said = await plane.turn("demo", "second question")
    assert said[-2].text == "Fresh."
    assert "first question" not in contents(plane.llm.requests[-1])


async def test_an_ordinary_refusal_is_not_taken_for_an_overflow(start_plane):
    plane = await start_plane(SMALL)
    plane.llm.fault(400, message="Invalid value for 'temperature'")
    said = await plane.turn("demo", "hello")
    [notice] = [m for m in said if m.kind == "plane"]
    assert "context" not in notice.text
    history = await plane.services.transcript.load("demo")
    assert [m.content for m in history] == ["hello"], "kept: a retry may well succeed"
