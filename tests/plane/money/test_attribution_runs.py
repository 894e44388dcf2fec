"""Cost by tool of the plane's own request: each run of messages of one
kind is one piece (`of_request`), which gives every part the tokens the
messages one by one would, and adds up exactly; a long history of short
messages makes a handful of pieces, not one a message."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from plane.money.attribution import Part, Piece, attribute, of_request
from plane.money.pricing import override_cost
from plane.providers.base import ChatMessage, CompletionRequest, ToolCall
from plane.wire.protocol import Usage
from tests.plane.money.strategies import usages
from tests.plane.money.test_cost_by_tool import PRICE
from tests.support.fixtures_examples import examples


def price(usage: Usage) -> Decimal:
    return override_cost(PRICE, usage)


def one_by_one(request: CompletionRequest) -> list[Piece]:
    """Each message its own piece, as the rule reads a prompt."""
    pieces = [Piece("prompt", len(request.system))]
    for m in request.messages:
        if m.role == "tool":
            pieces.append(Piece("tool", len(m.content), m.tool, m.mcp_server))
        else:
            called = sum(len(c.name) + len(c.arguments) for c in m.tool_calls)
            pieces.append(Piece("messages", len(m.content) + called))
    return pieces


TEXT = st.text(max_size=300)
CALLS = st.lists(
    st.builds(ToolCall, st.just("c1"), st.sampled_from(["grep", "read_file"]), TEXT), max_size=2
)
MESSAGES = st.one_of(
    st.builds(ChatMessage, st.sampled_from(["user", "assistant"]), TEXT),
    st.builds(lambda text, calls: ChatMessage("assistant", text, tuple(calls)), TEXT, CALLS),
    st.builds(
        lambda text, tool, server: ChatMessage("tool", text, (), "c1", tool, server),
        TEXT,
        st.sampled_from(["grep", "read_file", "notes.search"]),
        st.sampled_from([None, "notes"]),
    ),
)


def by_key(parts: list[Part]) -> tuple[Counter[tuple[object, ...]], Decimal]:
    tokens: Counter[tuple[object, ...]] = Counter()
    for p in parts:
        tokens[(p.part, p.tool, p.mcp_server)] += p.input_tokens
    return tokens, sum((p.cost_usd for p in parts), Decimal(0))


@settings(max_examples=examples(300), deadline=None)
@given(st.text(max_size=500), st.lists(MESSAGES, max_size=60), usages(st.integers(0, 200_000)))
def test_runs_give_each_part_the_tokens_of_its_messages_and_add_up_exactly(system, history, usage):
    request = CompletionRequest(model="m", system=system, messages=tuple(history))
    cost = price(usage)
    runs = attribute(of_request(request), usage, cost, price)
    each = attribute(one_by_one(request), usage, cost, price)
    runs_tokens, runs_cost = by_key(runs)
    each_tokens, _ = by_key(each)
    assert +runs_tokens == +each_tokens
    assert runs_cost == cost
    # Rounded once a run rather than once a message: within a share a message apart.
    costs = {(p.part, p.tool, p.mcp_server): p.cost_usd for p in runs}
    for p in each:
        assert abs(costs[(p.part, p.tool, p.mcp_server)] - p.cost_usd) <= Decimal(
            len(history) + 1
        ) * Decimal("1e-12")


def test_a_long_history_of_words_and_results_is_a_piece_a_run():
    history: list[ChatMessage] = []
    for _ in range(150):
        history += [
            ChatMessage("user", "What is the weather like?"),
            ChatMessage("assistant", "Sunny."),
        ]
    call = ToolCall("c1", "grep", '{"pattern": "x"}')
    history += [
        ChatMessage("assistant", "", (call,)),
        ChatMessage("tool", "a", (), "c1", "grep"),
        ChatMessage("tool", "b", (), "c2", "grep"),
        ChatMessage("tool", "c", (), "c3", "notes.search", "notes"),
        ChatMessage("assistant", "done"),
    ]
    request = CompletionRequest(model="m", system="You are demo.", messages=tuple(history))
    assert of_request(request) == [
        Piece("prompt", len("You are demo.")),
        Piece("messages", 150 * (25 + 6) + len("grep") + len(call.arguments)),
        Piece("tool", 2, "grep"),
        Piece("tool", 1, "notes.search", "notes"),
        Piece("messages", 4),
    ]
