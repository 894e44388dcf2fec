"""Editing an agent: role, model, tools and ceiling, as they are now.

Only what the operator changed is sent, all in one request, which the plane
checks whole: one bad value (a tool that does not exist, `-1` as a ceiling)
is its sentence under the fields, and nothing is changed.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Footer, Input, Label, Select, Static, TextArea

from plane.wire import protocol as p
from plane.wire.protocol import READ_ONLY_TOOLS, AgentState
from plane.wire.words import plain
from tui.link import Link
from tui.screens.agent_form import AgentForm


def tools_text(tools: tuple[str, ...] | None) -> str:
    """What the tools field shows: `all`, `read-only`, `none` (the words
    the new-agent form and `plane new` use), or the names."""
    if tools is None:
        return "all"
    if set(tools) == set(READ_ONLY_TOOLS):
        return "read-only"
    return ", ".join(tools) if tools else "none"


def limit_text(agent: AgentState) -> str:
    return "off" if agent.limit_usd is None else plain(agent.limit_usd)


TOOLS_LABEL = "Tools: all, read-only, none, or names (read_file, grep)"
GATEWAY = "A gateway agent: its client chooses the model, the tools and the prompt."


class EditAgent(AgentForm[AgentState]):
    """Dismissed with the agent as the plane has it after the edit."""

    AUTO_FOCUS = "#role, #limit"
    """The first field: a gateway agent's form has only its limit."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+s", "save", "Save")]

    def __init__(self, agent: AgentState, models: list[str], link: Link) -> None:
        super().__init__(agent.name)
        self.state = agent
        self.models = models if agent.model in models else [agent.model, *models]
        self.link = link

    def compose(self) -> ComposeResult:
        agent = self.state
        with Vertical(id="form") as form:
            form.border_title = f"edit {agent.name}"
            if agent.gateway:
                yield Label(GATEWAY, classes="field")
            else:
                yield Label("Role (system prompt)", classes="field")
                yield TextArea(agent.role, id="role", soft_wrap=True, show_line_numbers=False)
                yield Label("Model", classes="field")
                yield Select(
                    [(m, m) for m in self.models], allow_blank=False, value=agent.model, id="model"
                )
                yield Label(TOOLS_LABEL, classes="field")
                yield Input(tools_text(agent.tools), id="tools")
            yield Label("Daily ceiling: 5, $0.25, or off (as /limit)", classes="field")
            yield Input(limit_text(agent), id="limit")
            yield Static("", id="error")
            with Horizontal(id="buttons"):
                yield Button("Save", variant="primary", id="save")
                yield Button("Cancel", id="cancel")
        yield Footer()

    def changes(self) -> dict[str, object]:
        """What differs from the agent as it was: only that is sent."""
        agent = self.state
        changed: dict[str, object] = {}
        limit = self.query_one("#limit", Input).value.strip()
        if limit != limit_text(agent):
            changed["limit"] = limit
        if agent.gateway:
            return changed
        role = self.query_one("#role", TextArea).text.strip()
        if role != agent.role:
            changed["role"] = role
        model = self.query_one("#model", Select).value
        if isinstance(model, str) and model != agent.model:
            changed["model"] = model
        tools = self.query_one("#tools", Input).value.strip()
        if tools != tools_text(agent.tools):
            changed["tools"] = [t.strip() for t in tools.split(",") if t.strip()]
        return changed

    @on(Input.Submitted)
    @on(Button.Pressed, "#save")
    def action_save(self) -> None:
        changes = self.changes()
        if not changes:
            self.dismiss(None)
            return

        async def edit() -> AgentState:
            edit = p.EditAgent.model_validate({"agent": self.agent, **changes})
            reply = await self.link.request(edit)
            return reply.agent

        self.ask(edit)
