"""Screens whose widgets are styled once as they open, not twice.

Textual styles each widget as it is mounted, then styles the whole screen
again when it becomes the active one (`ScreenResume`), for a screen coming
back after the theme or the stylesheet changed while it was away. On its
first showing, nothing can have changed in between: its widgets were styled
a moment before, and the second pass was a third of the styling at the app's
start (and at each panel's first open), for an identical screen. The first resume skips
it; every later one (a panel closed, a theme changed meanwhile) still does
it when Textual asks for it. A change of the stylesheet while a screen is
being built restyles every screen anyway (`App.refresh_css`).
"""

from __future__ import annotations

from textual import events


class StyledOnce:
    """Base class before `Screen` (or `ModalScreen`) in a screen's bases."""

    _resumed_before = False

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        if not self._resumed_before:
            self._resumed_before = True
            event.refresh_styles = False
