"""The fleet at a glance: `55 agents · 4 working · 1 amber · 3 held · $1.12 today`.

One line under the title, whatever the list shows: a filter narrows the
rows, never this count, so held and amber agents are never out of sight.
The screen sets `fleet`; the amber and held counts take the rows' colours.
"""

from __future__ import annotations

from typing import ClassVar

from textual.content import Content
from textual.reactive import reactive
from textual.style import Style
from textual.widget import Widget

from tui.fleet import Fleet


class FleetLine(Widget):
    """Counts by state and the day's spend, from the store's `tui.fleet.Tally`."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "fleet-line--muted",
        "fleet-line--working",
        "fleet-line--warn",
        "fleet-line--held",
        "fleet-line--paused",
    }

    fleet: reactive[Fleet | None] = reactive(None)
    """None until the plane has listed its agents."""
    config: reactive[str] = reactive("")
    """`config: built-in defaults (no agents.yaml in …)` when the plane found
    no agents.yaml: said after the rest, in the room the rest leaves, so the
    agents shown are not taken for the file's."""

    def render(self) -> Content:
        if self.fleet is None or not self.fleet.agents:
            return Content("")
        muted = self.get_visual_style("fleet-line--muted")
        width = self.content_region.width or 1_000
        shown = _fitted(self.fleet.parts(), width)
        room = width - _length(shown) - len(" · ")
        if self.config and room >= len(CONFIG_LEAST):
            config = self.config if len(self.config) <= room else self.config[: room - 1] + "…"
            shown.append((config, ""))
        parts: list[tuple[str, Style]] = []
        for number, (text, state) in enumerate(shown):
            if number:
                parts.append((" · ", muted))
            style = self.get_visual_style(f"fleet-line--{state}") if state else muted
            parts.append((text, style))
        return Content.assemble(*parts)


CONFIG_LEAST = "config: built-in defaults"
"""The least of `config` worth saying; with less room, none of it."""

DROPPED_FIRST = ("", "working")
"""On a line too narrow for all of it, the agents' count goes first, then
the working count, then the day's spend says only its figure; what needs
the operator (held, paused, amber) and the figure stay."""


def _fitted(parts: list[tuple[str, str]], width: int) -> list[tuple[str, str]]:
    kept = list(parts)
    for state in DROPPED_FIRST:
        if _length(kept) <= width:
            return kept
        kept = [part for part in kept if part[1] != state or part is kept[-1]]
    if _length(kept) > width:
        text, state = kept[-1]
        kept[-1] = (text.removesuffix(" today"), state)
    return kept


def _length(parts: list[tuple[str, str]]) -> int:
    return len(" · ".join(text for text, _ in parts))
