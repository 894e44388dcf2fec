"""Says that the plane is not answering, and when the next try is (wrapped
to the width: the screen gives it the lines its sentence needs).

A client that shows stale figures without saying so would be lying; the
banner is how the rows' age is admitted. Hidden while connected.
"""

from __future__ import annotations

from textual.reactive import reactive
from textual.widgets import Static


class ConnectionBanner(Static):
    """Set `lost` to a sentence to show it; to None to hide."""

    lost: reactive[str | None] = reactive(None)
    """Why there is no connection and when the next attempt is, or None."""

    def watch_lost(self, lost: str | None) -> None:
        self.set_class(lost is not None, "-lost")
        self.update(f"✕ {lost}" if lost else "")
