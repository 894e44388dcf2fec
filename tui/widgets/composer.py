"""Where the operator types: messages and slash commands.

An `Input` with the command registry's autocomplete. Up and down do not edit
a one-line input, so they move between agents (`Step`): an operator can
switch agent and keep typing without leaving the keyboard's home row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input

from tui.commands import Commands, CommandSuggester


class Composer(Input):
    """The input line under the conversation."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "step(-1)", "Previous agent", show=False),
        Binding("down", "step(1)", "Next agent", show=False),
    ]

    @dataclass
    class Step(Message):
        """Move the agent selection by `delta` rows."""

        delta: int

    def __init__(self, commands: Commands, *, id: str | None = None) -> None:
        # Not Input's select-on-focus: coming back to a draft (or to a line
        # the list or a command began) must not make the next key replace it.
        super().__init__(
            placeholder="Message the agent, or /help",
            suggester=CommandSuggester(commands),
            select_on_focus=False,
            id=id,
        )

    def action_step(self, delta: int) -> None:
        self.post_message(self.Step(delta))
