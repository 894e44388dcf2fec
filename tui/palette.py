"""The command palette's entries for plane: go to an agent, create one, run a
slash command. The palette reads the store and the command registry; it
decides nothing either."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider


class PlaneCommands(Provider):
    """Agents by name, and each slash command with its help."""

    def _entries(self) -> list[tuple[str, str, Callable[[], object]]]:
        screen = self.app.main_screen  # type: ignore[attr-defined]
        entries: list[tuple[str, str, Callable[[], object]]] = [
            (f"Go to agent {name}", "Show its conversation", partial(screen.select_agent, name))
            for name in screen.store.names
        ]
        entries.append(("New agent", "Open the new-agent form", screen.open_new_agent))
        entries.append(("Spend charts", "Spend over time (ctrl+g)", self.app.action_spend))  # type: ignore[attr-defined]
        for command in screen.commands:
            entries.append(
                (command.usage, command.help, partial(screen.prefill, f"/{command.name} "))
            )
        return entries

    async def discover(self) -> Hits:
        for title, help, run in self._entries():
            yield DiscoveryHit(title, run, help=help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help, run in self._entries():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), run, help=help)
