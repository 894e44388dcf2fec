"""The help panel: this app's keys and the rows' legend, over the screen.

Opened by F1 anywhere or `?` in the agent list; Esc, F1, `?` or q closes it.
What it says comes from `tui.help`, which reads the widgets' bindings.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.help import Section, sections


class HelpScreen(ModalScreen[None]):
    """Keys by where they work, then what the marks in a row mean."""

    CSS_PATH = "help.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,question_mark,q", "dismiss", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help") as panel:
            panel.border_title = "keys and marks"
            panel.border_subtitle = "Esc closes"
            for heading, lines in sections():
                yield Static(Content(heading), classes="heading")
                # A grid of two columns, so a description that wraps goes on
                # under itself, never under the keys (a hanging indent).
                with Grid(classes="keys"):
                    for keys, what in lines:
                        yield Static(Content(keys), classes="key")
                        yield Static(Content(what), classes="what")

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


__all__ = ["HelpScreen", "Section"]
