"""SVG snapshots of the main screens (pytest-textual-snapshot).

Frames are fed directly (fixed times, fixed monotonic clock), so a picture
changes only when the drawing does. Update with `pytest --snapshot-update`.
"""

from __future__ import annotations

import pytest

from tests.tui.conftest import feed, settle
from tests.tui.scenes import burner_conversation, demo_conversation, fleet
from tui.app import PlaneApp
from tui.messages import PlaneLost
from tui.widgets.composer import Composer

SIZE = (100, 30)


def offline_app() -> PlaneApp:
    app = PlaneApp(None)
    app.store.clock = lambda: 0.0
    return app


async def demo(pilot) -> None:
    pilot.app.screen.query_one(Composer).cursor_blink = False
    feed(pilot.app, fleet(), *demo_conversation(), *burner_conversation())
    await settle(pilot, 6)
    for name in pilot.app.store.agents:  # fetched, as from a plane: offline, none ever is
        pilot.app.store.conversation(name).loaded = True


def test_main_screen(snap_compare) -> None:
    assert snap_compare(offline_app(), terminal_size=SIZE, run_before=demo)


def test_main_screen_light_theme(snap_compare) -> None:
    """Started in the light theme: switched to it once started, everything
    was restyled and redrawn a second time for the same picture."""
    app = offline_app()
    app.theme = "textual-light"
    assert snap_compare(app, terminal_size=SIZE, run_before=demo)


def test_held_agent(snap_compare) -> None:
    async def held(pilot) -> None:
        await demo(pilot)
        await pilot.press("alt+down", "alt+down", "alt+down")
        await settle(pilot, 6)

    assert snap_compare(offline_app(), terminal_size=SIZE, run_before=held)


@pytest.mark.slow
def test_new_agent_form(snap_compare) -> None:
    async def form(pilot) -> None:
        await demo(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        await pilot.press(*"scout")
        pilot.app.screen.post_message(
            pilot.app.screen.Refused("An agent named scout already exists; pick another name.")
        )
        pilot.app.screen.query_one("#name").cursor_blink = False
        await settle(pilot)

    assert snap_compare(offline_app(), terminal_size=SIZE, run_before=form)


def test_connection_lost(snap_compare) -> None:
    async def lost(pilot) -> None:
        await demo(pilot)
        pilot.app.post_message(
            PlaneLost(
                "The plane is not running; quit (ctrl+q) and run `plane`, which starts it"
                " in the background and opens the TUI again.",
                2.0,
                3,
                "/home/op/.local/share/plane/plane.sock",
            )
        )
        await settle(pilot)

    assert snap_compare(offline_app(), terminal_size=SIZE, run_before=lost)
