"""Textual's footer, which on a tiny screen keeps to the keys that matter there.

At 40 columns the footer's keys ran past the edge, and the palette's key,
docked at the right, was drawn over the last of them (`^n New agent^ppalette`).
Tight, it is compact, leaves out the palette's key and the keys F1 lists
anyway (a new agent, quit, light/dark); each still works. The rest (Interrupt while a
turn runs, Agents, which shows the folded list, Help) fit.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

LEFT_OUT = frozenset({"new_agent", "quit", "toggle_theme"})
"""Actions whose keys a tight footer does not show (F1 does)."""


class KeysFooter(Footer):
    tight: reactive[bool] = reactive(False, recompose=True)
    """A tiny screen: compact, no palette key, none of `LEFT_OUT`."""

    def watch_tight(self, tight: bool) -> None:
        self.compact = tight
        self.show_command_palette = not tight

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if self.tight and isinstance(widget, FooterKey) and widget.action in LEFT_OUT:
                continue
            yield widget
