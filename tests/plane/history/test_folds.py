"""A figure folded over a history and kept: after any change to the history
(grown, rewritten from a message on, read again as new objects, cut short)
it is the figure worked out over the whole history anew."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from plane.history.folds import Folds
from plane.money.attribution import NO_HISTORY, add_message
from plane.providers.base import ChatMessage
from tests.support.fixtures_examples import examples
from tests.support.history_edits import edited, edits

MESSAGE = st.one_of(
    st.builds(ChatMessage, st.sampled_from(["user", "assistant"]), st.text(max_size=30)),
    st.builds(
        lambda text, tool: ChatMessage("tool", text, (), "c1", tool),
        st.text(max_size=30),
        st.sampled_from(["grep", "read_file"]),
    ),
)
EDIT = edits(MESSAGE)


def anew(history: list[ChatMessage]) -> object:
    state = NO_HISTORY
    for message in history:
        state = add_message(state, message)
    return state


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(MESSAGE, max_size=20), st.lists(EDIT, max_size=12))
def test_a_kept_figure_is_always_the_whole_historys(start, edits):
    folds = Folds(NO_HISTORY, add_message, most=400)
    other = [ChatMessage("user", "another agent's")]
    history = list(start)
    assert folds.fold(history) == anew(history)
    for kind, at, message in edits:
        history = edited(history, kind, at, message)
        assert folds.fold(history) == anew(history)
        folds.fold(other)
        assert folds.kept_chars <= 400


def test_a_grown_history_is_folded_over_its_new_messages_only():
    seen: list[str] = []

    def count(n: int, message: ChatMessage) -> int:
        seen.append(message.content)
        return n + len(message.content)

    folds = Folds(0, count)
    history = [ChatMessage("user", "one"), ChatMessage("assistant", "two")]
    assert folds.fold(history) == 6
    history.append(ChatMessage("user", "three"))
    assert folds.fold(tuple(history)) == 11
    assert seen == ["one", "two", "three"]


def test_what_is_kept_is_bounded_by_its_text_the_oldest_going_first():
    folds = Folds(0, lambda n, m: n + 1, most=100)
    first = [ChatMessage("user", "x" * 40)]
    second = [ChatMessage("user", "y" * 40)]
    third = [ChatMessage("user", "z" * 40)]
    for history in (first, second, third):
        folds.fold(history)
    assert folds.kept_chars == 82  # the first went: 41 characters each
    assert folds.fold([ChatMessage("user", "w" * 200)]) == 1  # too long to keep
    assert folds.kept_chars == 82
