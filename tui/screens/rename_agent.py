"""Renaming an agent: one field, the name as it is; the plane checks the new one."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Footer, Input, Label, Static

from plane.wire import protocol as p
from plane.wire.protocol import AgentState
from tui.link import Link
from tui.screens.agent_form import AgentForm


class RenameAgent(AgentForm[AgentState]):
    """Dismissed with the agent under its new name."""

    AUTO_FOCUS = "#new-name"

    def __init__(self, agent: str, link: Link) -> None:
        super().__init__(agent)
        self.link = link

    def compose(self) -> ComposeResult:
        with Vertical(id="form") as form:
            form.border_title = f"rename {self.agent}"
            yield Label("New name (its conversation and spend follow it)", classes="field")
            yield Input(self.agent, id="new-name")
            yield Static("", id="error")
            with Horizontal(id="buttons"):
                yield Button("Rename", variant="primary", id="rename")
                yield Button("Cancel", id="cancel")
        yield Footer()

    @on(Input.Submitted, "#new-name")
    @on(Button.Pressed, "#rename")
    def _rename(self) -> None:
        new = self.query_one("#new-name", Input).value.strip()

        async def rename() -> AgentState:
            reply = await self.link.request(p.RenameAgent(agent=self.agent, new_name=new))
            return reply.agent

        self.ask(rename)
