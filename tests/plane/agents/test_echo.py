"""Which answers are the plane's words coming back (`plane.agents.echo`)."""

from __future__ import annotations

import pytest

from plane.agents.echo import echoes

NUDGE = (
    "You already made this exact call in this turn; its result is above. "
    "Answer now with what you have."
)
REFUSAL = (
    "This agent asked for a ceiling of $50.00 a day, which is above the $5.00 it has. It can "
    "ask to be held to less, never to more: /limit $50.00, if you meant it."
)


@pytest.mark.parametrize(
    "answer",
    [
        "You've already made this exact call in this turn; its result is above…",
        "I asked for a ceiling of $50.00 a day, which is above the $5.00 it has. "
        "It can ask to be held to less, never to more.",
    ],
)
def test_the_plane_s_sentence_written_back_is_an_echo(answer: str) -> None:
    assert echoes(answer, [NUDGE, REFUSAL])


@pytest.mark.parametrize(
    "answer",
    [
        "Fine.",
        "The build failed because the linker could not find libssl; install it and retry.",
        "My ceiling is $5.00 a day and I asked for $50.00, which was refused.",
    ],
)
def test_an_answer_of_its_own_is_not(answer: str) -> None:
    assert not echoes(answer, [NUDGE, REFUSAL])
