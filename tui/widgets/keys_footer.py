"""Textual's footer, which on a tiny screen keeps to the keys that matter there.

At 40 columns the footer's keys ran past the edge, and the palette's key,
docked at the right, was drawn over the last of them (`^n New agent^ppalette`).
Tight, it is compact, leaves out the palette's key and the keys F1 lists
anyway (a new agent, quit, light/dark); each still works. The rest (Interrupt while a
turn runs, Agents, which shows the folded list, Help) fit.

Textual's footer rebuilds its keys whenever the screen's bindings may have
changed: at every move of the focus, every key that changes what an action
allows. Most of those change nothing it shows, and each rebuild styles and
lays out its keys afresh. This one rebuilds only when what it shows changed.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

LEFT_OUT = frozenset({"new_agent", "quit", "toggle_theme"})
"""Actions whose keys a tight footer does not show (F1 does)."""


Shown = tuple[tuple[Binding, bool, str], ...]
"""What a footer's keys are made of: each binding it may show, whether it is
enabled, and its tooltip."""


class KeysFooter(Footer):
    tight: reactive[bool] = reactive(False, recompose=True)
    """A tiny screen: compact, no palette key, none of `LEFT_OUT`."""

    _shown: Shown | None = None
    """What the keys were last built from (None: not built yet)."""

    def bindings_changed(self, screen: Screen[object]) -> None:
        self._bindings_ready = True
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self.call_after_refresh(self._rebuild_if_changed)

    async def _rebuild_if_changed(self) -> None:
        if not self.is_attached:
            return
        shown = self._now_shown()
        if shown != self._shown:
            self._shown = shown
            await self.recompose()

    def _now_shown(self) -> Shown:
        palette = self.app.COMMAND_PALETTE_BINDING
        return tuple(
            (binding, enabled, tooltip)
            for key, (_, binding, enabled, tooltip) in self.screen.active_bindings.items()
            if binding.show or key == palette
        )

    def watch_tight(self, tight: bool) -> None:
        self.compact = tight
        self.show_command_palette = not tight

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if isinstance(widget, FooterKey):
                if self.tight and widget.action in LEFT_OUT:
                    continue
                _compact_from_the_start(widget, self.compact)
            yield widget


def _compact_from_the_start(key: FooterKey, compact: bool) -> None:
    """The key is built compact or not, as it will be drawn. Textual's keys
    start compact and are then told the footer's `compact` once mounted (the
    palette's key is never told and stays compact): each change of the class
    styled the key again, twice for each key at each rebuild: a fifth of the
    styling at the app's start, for what the first styling had said."""
    compact = compact or key.has_class("-command-palette")
    key.set_reactive(FooterKey.compact, compact)
    key.set_class(compact, "-compact", update=False)
