"""Helpers for the TUI's tests: a fixed time zone (message times are shown in
local time), and an offline app to feed frames to as the client would."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from textual.widget import Widget

from plane.wire.protocol import Event, Snapshot
from tui.app import PlaneApp
from tui.messages import PlaneConnected, PlaneEvent
from tui.widgets.agent_list import AgentList
from tui.widgets.agent_list import row_classes as classes_of


@pytest.fixture(autouse=True)
def utc_display(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def feed(app: PlaneApp, *frames: Snapshot | Event) -> None:
    """Post frames exactly as `PlaneClient` posts what it reads."""
    for frame in frames:
        if isinstance(frame, Snapshot):
            app.post_message(PlaneConnected(frame, "test"))
        else:
            app.post_message(PlaneEvent(frame))


async def settle(pilot, rounds: int = 3) -> None:
    """Let posted messages, signals and mounts run through."""
    for _ in range(rounds):
        await pilot.pause(0)


def focused(app: PlaneApp) -> Widget | None:
    """What has the focus now: read afresh each time, as a key moves it
    (`app.focused`, asserted on, would stay what the assertion said)."""
    return app.focused


def drawn_row(app: PlaneApp, agent: str) -> str:
    """The agent's row as drawn on screen (words joined by single spaces),
    or "" when it has no row."""
    agents = app.main_screen.query_one(AgentList)
    if agent not in agents.names:
        return ""
    line = agents.render_line(agents.names.index(agent) - agents.scroll_offset.y)
    return " ".join(line.text.split())


def row_classes(app: PlaneApp, agent: str) -> frozenset[str]:
    """The row's state classes (`-warn`, `-over`, `-held`, …)."""
    return classes_of(app.store.agents[agent])
