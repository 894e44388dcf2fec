"""App-wide messages: what the plane's connection tells the app.

`PlaneClient` is not a widget, so it cannot bubble anything; it posts these to
the app, in the order the frames arrived, and the app hands them to the store.
Widget-specific messages live on their widgets (`AgentList.Selected`).
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from plane.wire.protocol import Event, Snapshot


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
