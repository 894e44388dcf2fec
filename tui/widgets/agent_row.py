"""One agent's row: state glyph, name, and what it spent today.

An agent that has spent nothing shows no figure (a column of `$0.00` is noise;
the row you look for is the one unlike the others). The figure's colour is a
class, `-warn` or `-over`, set from the plane's numbers and coloured in
`app.tcss` with theme variables, so it stays readable in every theme.
"""

from __future__ import annotations

from typing import ClassVar

from textual.content import Content
from textual.reactive import reactive
from textual.widgets import ListItem

from plane.protocol import AgentState
from tui.formatting import dollars, spend_level

GLYPHS = {"working": "●", "idle": "○", "held": "■"}
"""working: a turn in flight; idle: waiting; held: at its ceiling, taking no turn."""


class AgentRow(ListItem):
    """A row of the agent list, redrawn whenever `agent` is set."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"agent-row--glyph", "agent-row--spend"}

    agent: reactive[AgentState] = reactive(None, always_update=False)  # type: ignore[arg-type]
    """The agent as the plane last described it."""

    def __init__(
        self,
        agent: AgentState,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.set_reactive(AgentRow.agent, agent)
        self._set_state_classes(agent)

    @property
    def agent_name(self) -> str:
        return self.agent.name

    def render(self) -> Content:
        agent = self.agent
        width = self.size.width  # the content area: padding already excluded
        figure = dollars(agent.spend_today_usd) if agent.spend_today_usd > 0 else ""
        glyph = (GLYPHS.get(agent.status, "?"), self.get_visual_style("agent-row--glyph"))
        room = max(1, width - 2 - (len(figure) + 1 if figure else 0))
        label = Content(agent.name).truncate(room, ellipsis=True, pad=True)
        spend = (figure, self.get_visual_style("agent-row--spend"))
        return Content.assemble(glyph, " ", label, " " if figure else "", spend)

    def watch_agent(self, agent: AgentState) -> None:
        self._set_state_classes(agent)

    def _set_state_classes(self, agent: AgentState) -> None:
        level = spend_level(agent)
        self.set_class(level == "warn", "-warn")
        self.set_class(level == "over", "-over")
        for status in GLYPHS:
            self.set_class(agent.status == status, f"-{status}")
