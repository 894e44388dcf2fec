"""The new-agent form: name, model, tools, role.

The plane validates and creates; this form only collects and shows what the
plane answered. A refusal (`invalid`, `exists`) appears under the fields as
the plane's own sentence, and the form stays open with what was typed. The
new agent gets the plane's `defaults`, ceiling included; nothing here sets
one, but the form says which it will be (the plane sends its defaults with
every snapshot), because a ceiling nobody saw set is one nobody remembers.

Tools are none, read-only or all. The field starts at what the plane says
suits the chosen model (none on the embedded one), and follows the model
until the operator picks tools themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Select, Static, TextArea

from plane.wire.protocol import AgentState, NewAgent, ToolSet
from plane.wire.words import usd_exact
from tui.link import Asks, LinkFailed
from tui.screens.styled import StyledOnce


def starting_limit(limit: Decimal | None, *, known: bool = True) -> str:
    """The line under the form: the daily ceiling the new agent starts with.
    `known` is False when the plane did not say its defaults (an older one)."""
    if not known:
        return "It starts with the plane's default daily ceiling."
    if limit is None:
        return "No spending limit: defaults set none; /limit sets one."
    return f"Spending limit: {usd_exact(limit)} a day, from defaults; /limit changes it."


TOOL_CHOICES: list[tuple[str, ToolSet]] = [
    ("no tools", "none"),
    ("read-only", "read-only"),
    ("all tools", "all"),
]


class NewAgentScreen(StyledOnce, ModalScreen[AgentState | None]):
    """Dismissed with the created agent, or None when cancelled."""

    CSS_PATH = Path(__file__).with_name("new_agent.tcss")
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
        plane: Asks,
        *,
        default_model: str | None = None,
        default_limit: Decimal | None = None,
        tool_defaults: dict[str, ToolSet] | None = None,
    ) -> None:
        """`default_model` None: the plane did not say its defaults;
        `tool_defaults`: the tools that suit each model (empty: the plane's
        own choice, whatever the form shows, until the operator picks)."""
        super().__init__()
        self.models = models
        self.plane = plane
        self.default_model = default_model
        self.default_limit = default_limit
        self.tool_defaults = dict(tool_defaults or {})
        self._model: str | None = default_model if default_model in models else None
        """The model the tools field last followed."""

    def compose(self) -> ComposeResult:
        with Vertical(id="form") as form:
            form.border_title = "new agent"
            yield Label("Name", classes="field")
            yield Input(placeholder="e.g. scout", id="name")
            model = self._model
            with Horizontal(id="choices"):
                with Vertical(id="model-column"):
                    yield Label("Model", classes="field")
                    yield Select(
                        [(m, m) for m in self.models],
                        allow_blank=not self.models,
                        prompt="no models configured",
                        id="model",
                        value=model if model is not None else Select.NULL,
                    )
                with Vertical(id="tools-column"):
                    yield Label("Tools", classes="field")
                    yield Select(
                        TOOL_CHOICES,
                        allow_blank=False,
                        id="tools",
                        value=self._suited(model),
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

    def _suited(self, model: str | None) -> ToolSet:
        return self.tool_defaults.get(model or "", "none")

    @on(Select.Changed, "#model")
    def _model_changed(self, event: Select.Changed) -> None:
        """Tools follow the model while they are what suited the last one;
        tools the operator picked stay as picked."""
        if not isinstance(event.value, str) or event.value == self._model:
            return
        tools = self.query_one("#tools", Select)
        if tools.value == self._suited(self._model):
            tools.value = self._suited(event.value)
        self._model = event.value

    @on(Input.Submitted, "#name")
    @on(Button.Pressed, "#create")
    def action_create(self) -> None:
        name = self.query_one("#name", Input).value.strip()
        model = self.query_one("#model", Select).value
        tools = self.query_one("#tools", Select).value
        role = self.query_one("#role", TextArea).text.strip()
        if not isinstance(model, str):
            self._show_error("Pick a model first (the plane has none configured).")
            return
        self.query_one("#create", Button).disabled = True
        # Sent as shown: what the field says is what the agent gets.
        chosen = next((t for _, t in TOOL_CHOICES if t == tools), None)
        self.submit(name, model, role, chosen)

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
    async def submit(self, name: str, model: str, role: str, tools: ToolSet | None) -> None:
        try:
            reply = await self.plane.request(
                NewAgent(name=name, model=model, role=role, tools=tools)
            )
        except LinkFailed as exc:
            self.post_message(self.Refused(_NOT_CREATED.get(exc.failure, str(exc))))
        else:
            self.post_message(self.Created(reply.agent))


_NOT_CREATED = {
    "offline": "Not connected to the plane; try again once it is.",
    "timeout": "The plane did not answer in time; the agent may appear once it has.",
}
"""What the form says when no refusal came; a refusal is the plane's own sentence."""
