"""The last row of the agent list: `+ new agent`, which opens the form."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import ListItem


class NewAgentRow(ListItem):
    """Selecting it (Enter, click) asks for the new-agent form."""

    def render(self) -> Content:
        return Content("+ new agent")
