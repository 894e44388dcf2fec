"""Deleting an agent asks first, and says what deleting does and does not do:
its conversation and ledger rows stay, and its spend still counts for the day.
Cancel has the focus: Enter alone deletes nothing; `y` or the button does."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Footer, Static

from plane.wire.protocol import DeleteAgent
from tui.link import Link
from tui.screens.agent_form import AgentForm


def question(agent: str) -> str:
    return (
        f"Delete {agent}? Its conversation and ledger rows are kept, and what it spent "
        "today still counts: deleting never refunds."
    )


class ConfirmDelete(AgentForm[bool]):
    """Dismissed with True once the plane has deleted the agent."""

    AUTO_FOCUS = "#cancel"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "delete", "Delete"),
        Binding("n", "cancel", "Keep it"),
    ]

    def __init__(self, agent: str, link: Link) -> None:
        super().__init__(agent)
        self.link = link

    def compose(self) -> ComposeResult:
        with Vertical(id="form") as form:
            form.border_title = f"delete {self.agent}"
            yield Static(question(self.agent), id="question")
            yield Static("", id="error")
            with Horizontal(id="buttons"):
                yield Button("Delete (y)", variant="error", id="delete")
                yield Button("Cancel", id="cancel")
        yield Footer()

    @on(Button.Pressed, "#delete")
    def action_delete(self) -> None:
        async def delete() -> bool:
            await self.link.request(DeleteAgent(agent=self.agent))
            return True

        self.ask(delete)
