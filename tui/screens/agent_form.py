"""What the operator's small forms about one agent share (delete, rename,
edit): they ask the plane once, show its refusal under the fields as its own
sentence and stay open with what was typed, and close with what it answered.
The plane decides; a form only collects.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from textual import on, work
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from tui.link import LinkFailed
from tui.screens.styled import StyledOnce

R = TypeVar("R")


class AgentForm(StyledOnce, ModalScreen[R | None], Generic[R]):
    """Dismissed with the plane's answer, or None when cancelled."""

    CSS_PATH = Path(__file__).with_name("agent_form.tcss")

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    @dataclass
    class Answered(Message):
        value: Any

    @dataclass
    class Refused(Message):
        reason: str

    def __init__(self, agent: str) -> None:
        super().__init__()
        self.agent = agent

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#cancel")
    def _cancel_pressed(self) -> None:
        self.dismiss(None)

    @on(Answered)
    def _answered(self, event: Answered) -> None:
        self.dismiss(event.value)

    @on(Refused)
    def _refused(self, event: Refused) -> None:
        for button in self.query(Button):
            button.disabled = False
        error = self.query_one("#error", Static)
        error.update(event.reason)
        error.set_class(True, "-shown")

    def ask(self, request: Callable[[], Awaitable[Any]]) -> None:
        for button in self.query(Button):
            button.disabled = True
        self._ask(request)

    @work(exclusive=True, exit_on_error=False)
    async def _ask(self, request: Callable[[], Awaitable[Any]]) -> None:
        try:
            value = await request()
        except LinkFailed as exc:
            self.post_message(self.Refused(_UNSENT.get(exc.failure, str(exc))))
        else:
            self.post_message(self.Answered(value))


_UNSENT = {
    "offline": "Not connected to the plane; try again once it is.",
    "timeout": "The plane did not answer in time; it may have done it: look again in a moment.",
}
"""What a form says when no refusal came; a refusal is the plane's own sentence."""
