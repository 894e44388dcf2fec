"""What is being written to which agent. The composer holds the text for one
agent at a time; what was written to the others is kept until they are shown
again. Text written to an agent that went away (deleted, or gone from the
plane when the link came back) stays in the composer, unsent: the first Enter
says where it was meant to go, the second sends it to the agent shown now.
A message sent while the link is down stays where it was written until the
plane takes it (the send waits a moment for the link) or it is given back.

No widgets here: the main screen reads and sets the composer's text."""

from __future__ import annotations


class Drafts:
    def __init__(self) -> None:
        self.kept: dict[str, str] = {}
        """What was being written to each agent, kept while another is shown."""
        self.writing_to: str | None = None
        """The agent the composer's text is for."""
        self._orphaned: tuple[str, str] | None = None
        """The agent that went away with the composer's text written to it,
        and what became of it ("was deleted")."""
        self._waiting: list[tuple[str, str]] = []
        """(agent, text) sent while the link was down, not yet taken or given back."""

    def shown(self, agent: str, text: str) -> str | None:
        """`agent` is shown now, with `text` in the composer: what the composer
        is to hold instead (None: leave it). The text written to the agent
        left is kept; after an agent went away, its text stays, and this
        agent's own draft goes above it."""
        left, self.writing_to = self.writing_to, agent
        if left is not None and left != agent:
            self._orphaned = None  # the operator moved on: it is this agent's draft now
            self.kept[left] = text
            return self.kept.pop(agent, "")
        if left is None and (draft := self.kept.pop(agent, "")):
            return f"{draft}\n{text}" if text else draft
        return None

    def went_away(self, agent: str, fate: str, text: str) -> bool:
        """The agent written to went away (`fate`: "was deleted"): whether
        there is text of its in the composer, kept there unsent."""
        self.writing_to = None  # the next agent shown keeps the composer's text
        if text.strip():
            self._orphaned = (agent, fate)
            return True
        return False

    def renamed(self, old: str, new: str) -> None:
        """A draft follows its agent's new name."""
        if old in self.kept:
            self.kept[new] = self.kept.pop(old)
        if self.writing_to == old:
            self.writing_to = new

    def cleared(self) -> None:
        """The composer was emptied: what was written to an agent that went away is gone."""
        self._orphaned = None

    def held_back(self, shown: str) -> str | None:
        """Enter, with text written to an agent that went away and `shown`
        shown now: what to say instead of sending it (None: send it). Said
        once; Enter again sends it."""
        if self._orphaned is None:
            return None
        (gone, fate), self._orphaned = self._orphaned, None
        return f"That was written to {gone}, which {fate}: Enter again sends it to {shown}."

    def refused(self, agent: str, text: str) -> bool:
        """A message to `agent` that the plane refused or never got: kept as
        its draft unless it has a draft already; whether `agent` is the one
        being written to now (then the composer takes it back instead)."""
        if agent == self.writing_to:
            return True
        if not self.kept.get(agent, "").strip():
            self.kept[agent] = text
        return False

    def wait(self, agent: str, text: str) -> None:
        """`text` was sent to `agent` while the link was down: it stays written."""
        self._waiting.append((agent, text))

    def is_waiting(self, agent: str, text: str) -> bool:
        """Whether Enter on `text` would send it a second time."""
        return (agent, text) in self._waiting

    def settled(self, agent: str, text: str, composer: str, *, taken: bool) -> bool:
        """A send has an outcome: whether the composer (holding `composer`)
        is to be emptied. Taken by the plane, a text that waited leaves where
        it was written (the composer, or `agent`'s kept draft), unless
        something else has been written there since; given back, it stays."""
        if (agent, text) not in self._waiting:
            return False
        self._waiting.remove((agent, text))
        if not taken:
            return False
        if agent == self.writing_to:
            return composer.strip() == text
        if self.kept.get(agent, "").strip() == text:
            del self.kept[agent]
        return False
