"""Helpers for the TUI's tests: a fixed time zone (message times are shown in
local time), and an offline app to feed frames to as the client would."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from plane.protocol import Event, Snapshot
from tui.app import PlaneApp
from tui.messages import PlaneConnected, PlaneEvent


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


async def settle(pilot, rounds: int = 3) -> None:  # type: ignore[no-untyped-def]
    """Let posted messages, signals and mounts run through."""
    for _ in range(rounds):
        await pilot.pause()
