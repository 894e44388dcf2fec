"""Each API's request as the loop guard sees it (plane/gateway/repeats.py):
only its newest part is new, a resend is the same request whatever its
volatile fields, and the guard fed with them finds a client's loops."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from plane.agents.guard import Guard, Loop, seen
from plane.config import GuardConfig
from plane.gateway.repeats import chat_look, messages_look, request_digest, responses_look

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def feed(looks: list[Any]) -> list[tuple[int, Loop]]:
    guard = Guard(GuardConfig())
    found = []
    for n, look in enumerate(looks, 1):
        loop = guard.step(look.step(Decimal("0.01"), T0 + timedelta(seconds=n)))
        if loop is not None:
            found.append((n, loop))
            guard.forget()
    return found


def anthropic_reads(reads: list[tuple[str, str]]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for n, (path, result) in enumerate(reads):
        use = {"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {"file_path": path}}
        messages.append({"role": "assistant", "content": [{"type": "text", "text": "."}, use]})
        content = [
            {"type": "tool_result", "tool_use_id": f"t{n}", "content": result},
            {"type": "text", "text": f"<system-reminder>{n}</system-reminder>"},
        ]
        messages.append({"role": "user", "content": content})
    return {"model": "m", "max_tokens": 10, "messages": messages}


def test_an_anthropic_request_brings_its_newest_tool_results_with_their_calls():
    look = messages_look(anthropic_reads([("a.py", "one"), ("b.py", "two")]))
    assert look.tools == (seen("Read", json.dumps({"file_path": "b.py"}), "two"),)
    assert look.texts == () and look.answer is None


def test_a_resend_is_the_same_request_whatever_its_volatile_fields():
    body = anthropic_reads([("a.py", "one")])
    again = {**body, "metadata": {"user_id": "other"}, "stream": True}
    assert request_digest(body) == request_digest(again)
    assert request_digest(body) != request_digest({**body, "max_tokens": 11})


def test_two_calls_alternating_with_the_same_results_are_a_round_on_every_api():
    alternating = [("a.py", "A"), ("b.py", "B")] * 5
    found = feed([messages_look(anthropic_reads(alternating[:n])) for n in range(1, 11)])
    assert [(n, loop.kind, loop.times) for n, loop in found] == [(8, "round", 4)]

    def responses(n: int) -> dict[str, Any]:
        items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        for i, (path, out) in enumerate(alternating[:n]):
            args = json.dumps({"path": path})
            items.append(
                {"type": "function_call", "call_id": f"c{i}", "name": "cat", "arguments": args}
            )
            items.append({"type": "function_call_output", "call_id": f"c{i}", "output": out})
        return {"model": "m", "input": items}

    found = feed([responses_look(responses(n)) for n in range(1, 11)])
    assert [(n, loop.kind) for n, loop in found] == [(8, "round")]


def test_a_client_that_says_continue_and_gets_the_same_answer_is_an_answer_loop():
    def chat(n: int) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "finish it"}]
        for _ in range(n):
            messages.append({"role": "assistant", "content": "I cannot go on."})
            messages.append({"role": "user", "content": "continue"})
        return {"model": "m", "messages": messages}

    looks = [chat_look(chat(n)) for n in range(0, 8)]
    assert looks[1].answer == "I cannot go on." and looks[0].answer is None
    found = feed(looks)
    assert [(n, loop.kind) for n, loop in found] == [(6, "answer")]


def test_new_words_from_the_client_are_news():
    def chat(n: int) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
        for i in range(n):
            messages.append({"role": "assistant", "content": "Done."})
            messages.append({"role": "user", "content": f"now step {i}"})
        return {"model": "m", "messages": messages}

    assert feed([chat_look(chat(n)) for n in range(30)]) == []


def test_a_request_that_opens_a_conversation_is_never_a_resend() -> None:
    """No answer in it and nothing it continues: a new session (news), not a resend."""
    asked = {"model": "m", "messages": [{"role": "user", "content": "Is the build green?"}]}
    for look in (messages_look(asked), chat_look(asked)):
        assert look.request is None
        assert look.step(Decimal(0), T0).news
    under_way = {
        **asked,
        "messages": [
            *asked["messages"],
            {"role": "assistant", "content": "Which one?"},
            {"role": "user", "content": "main"},
        ],
    }
    assert messages_look(under_way).request == request_digest(under_way)
    assert not messages_look(under_way).step(Decimal(0), T0).news
    assert responses_look({"model": "m", "input": "Is it green?"}).request is None
    continued = {"model": "m", "input": "And now?", "previous_response_id": "resp_1"}
    assert responses_look(continued).request == request_digest(continued)
