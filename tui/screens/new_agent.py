"""The new-agent form: name, model, role.

The plane validates and creates; this form only collects and shows what the
plane answered. A refusal (`invalid`, `exists`) appears under the fields as
the plane's own sentence, and the form stays open with what was typed. The
new agent gets the plane's `defaults`, ceiling included; nothing here sets
one, but the form says which it will be (the plane sends its defaults with
every snapshot), because a ceiling nobody saw set is one nobody remembers.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import ClassVar, Protocol

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Select, Static, TextArea

from plane.wire.protocol import AgentCreated, AgentState
from plane.wire.words import usd_exact
from tui.link import LinkFailed


def starting_limit(limit: Decimal | None, *, known: bool = True) -> str:
    """The line under the form: the daily ceiling the new agent starts with.
    `known` is False when the plane did not say its defaults (an older one)."""
    if not known:
        return "It starts with the plane's default daily ceiling."
    if limit is None:
        return "No spending limit: defaults set none; /limit sets one."
    return f"Spending limit: {usd_exact(limit)} a day, from defaults; /limit changes it."


class CreatesAgents(Protocol):
    async def new_agent(self, name: str, model: str, role: str = "") -> AgentCreated: ...


class NewAgentScreen(ModalScreen[AgentState | None]):
    """Dismissed with the created agent, or None when cancelled."""

    CSS_PATH = "new_agent.tcss"
    AUTO_FOCUS = "#name"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "create", "Create"),
    ]

    @dataclass
    class Created(Message):
        agent: AgentState

    @dataclass
    class Refused(Message):
        reason: str

    def __init__(
        self,
        models: list[str],
        plane: CreatesAgents,
        *,
        default_model: str | None = None,
        default_limit: Decimal | None = None,
    ) -> None:
        """`default_model` None: the plane did not say its defaults."""
        super().__init__()
        self.models = models
        self.plane = plane
        self.default_model = default_model
        self.default_limit = default_limit

    def compose(self) -> ComposeResult:
        with Vertical(id="form") as form:
            form.border_title = "new agent"
            yield Label("Name", classes="field")
            yield Input(placeholder="e.g. scout", id="name")
            yield Label("Model", classes="field")
            yield Select(
                [(model, model) for model in self.models],
                allow_blank=not self.models,
                prompt="no models configured",
                id="model",
                value=self.default_model if self.default_model in self.models else Select.NULL,
            )
            yield Label("Role (system prompt, optional)", classes="field")
            yield TextArea(id="role", soft_wrap=True, show_line_numbers=False)
            yield Static("", id="error")
            known = self.default_model is not None
            yield Static(starting_limit(self.default_limit, known=known), id="note")
            with Horizontal(id="buttons"):
                yield Button("Create", variant="primary", id="create")
                yield Button("Cancel", id="cancel")
        yield Footer()

    @on(Input.Submitted, "#name")
    @on(Button.Pressed, "#create")
    def action_create(self) -> None:
        name = self.query_one("#name", Input).value.strip()
        model = self.query_one("#model", Select).value
        role = self.query_one("#role", TextArea).text.strip()
        if not isinstance(model, str):
            self._show_error("Pick a model first (the plane has none configured).")
            return
        self.query_one("#create", Button).disabled = True
        self.submit(name, model, role)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Created)
    def _created(self, event: Created) -> None:
        self.dismiss(event.agent)

    @on(Refused)
    def _refused(self, event: Refused) -> None:
        self.query_one("#create", Button).disabled = False
        self._show_error(event.reason)
        self.query_one("#name", Input).focus()

    def _show_error(self, reason: str) -> None:
        error = self.query_one("#error", Static)
        error.update(reason)
        error.set_class(bool(reason), "-shown")

    @work(exclusive=True, exit_on_error=False)
    async def submit(self, name: str, model: str, role: str) -> None:
        try:
            reply = await self.plane.new_agent(name, model, role)
        except LinkFailed as exc:
            self.post_message(self.Refused(_NOT_CREATED.get(exc.failure, str(exc))))
        else:
            self.post_message(self.Created(reply.agent))


_NOT_CREATED = {
    "offline": "Not connected to the plane; try again once it is.",
    "timeout": "The plane did not answer in time; the agent may appear once it has.",
}
"""What the form says when no refusal came; a refusal is the plane's own sentence."""
