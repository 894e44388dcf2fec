"""A call's estimate, its history's characters and its tools' kept between
calls, is the estimate worked out whole: as the history grows, is rewritten
or read again, and as its tools change."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from plane.agents.metering import prompt_tokens_estimate
from plane.money.attribution import of_request
from plane.providers.base import ChatMessage, CompletionRequest, ToolSpec
from plane.providers.once import OncePerObject
from tests.support.fixtures_examples import examples

TOOLS = [
    ToolSpec("grep", "Searches.", {"type": "object", "properties": {"pattern": {}}}),
    ToolSpec("read_file", "Reads a file.", {"type": "object"}),
]


def whole(request: CompletionRequest) -> int:
    chars = len(request.system) + sum(len(m.content) for m in request.messages)
    chars += sum(len(str(t.parameters)) + len(t.description) for t in request.tools)
    return math.ceil(chars / 3.5)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.tuples(st.text(max_size=50), st.integers(0, 3)), max_size=30))
def test_the_kept_estimate_is_the_whole_one(steps):
    history: list[ChatMessage] = [ChatMessage("user", "first")]
    for text, kind in steps:
        if kind == 0:
            history.append(ChatMessage("assistant", text))
        elif kind == 1:
            history[len(history) // 2] = ChatMessage("user", text)
        elif kind == 2:
            history = [ChatMessage(**m.__dict__) for m in history]
        tools = tuple(TOOLS[: len(text) % 3])
        if kind == 3:  # the same schema, a new object with a new description
            tools = (ToolSpec("grep", text, {"type": "object"}),)
        request = CompletionRequest(model="m", system="s", messages=tuple(history), tools=tools)
        assert prompt_tokens_estimate(request) == whole(request)
        assert of_request(request)[0].chars == 1 + sum(
            len(t.name) + len(t.description) + len(json.dumps(t.parameters)) for t in tools
        )


def test_a_figure_is_worked_out_once_an_object_and_never_lent_to_an_equal_one():
    worked: list[object] = []

    def size(tool: ToolSpec) -> int:
        worked.append(tool)
        return len(tool.description)

    once = OncePerObject(size, most=2)
    a, b = ToolSpec("a", "one", {}), ToolSpec("a", "one", {})
    assert once(a) == once(a) == once(b) == 3
    assert worked == [a, b] and worked[1] is b
    c = ToolSpec("c", "three", {})
    assert once(c) == 5 and once(a) == 3  # past `most`: forgotten, worked out again
    assert len(worked) == 4
