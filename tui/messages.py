"""App-wide messages: what the plane's link tells the app, and what became
of a request.

The link (`tui.link.Link`) is not a widget, so it cannot bubble anything; it
posts these to the app, in the order the frames arrived, and the app hands
them to the store. Widget-specific messages live on their widgets
(`AgentList.Selected`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message

from plane.wire.protocol import Event, Request, Snapshot


@dataclass
class PlaneConnected(Message):
    """Subscribed: `snapshot` is the whole truth as of now; draw from it."""

    snapshot: Snapshot
    address: str


@dataclass
class PlaneLost(Message):
    """The connection is gone (or never came); another try in `retry_in` s,
    unless `final`: the plane refused this client, and no try follows."""

    reason: str
    retry_in: float
    attempt: int
    address: str
    final: bool = False


@dataclass
class PlaneEvent(Message):
    """One event frame from the plane, decoded."""

    event: Event


@dataclass
class Failed(Message):
    """A request did not go through: `text` is the one sentence to show."""

    request: Request[Any] | None
    """What was asked; None when nothing could be (no connection)."""
    text: str

    @property
    def agent(self) -> str | None:
        """The agent the request was about, if any."""
        agent = getattr(self.request, "agent", None)
        return agent if isinstance(agent, str) else None
