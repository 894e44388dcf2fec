"""The selected agent is remembered across a relaunch, in a small file in
the plane's home; a broken file is forgotten, never an error."""

from __future__ import annotations

import json
import stat

from tests.tui.test_live import SIZE, app_for, until
from tui.memory import Memory


async def test_a_relaunched_tui_shows_the_agent_it_showed_last(start_plane, usual_umask) -> None:
    """And `tui.json`, which names the operator's agents, is made 0600 as
    the home's files are, whatever the umask."""
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        await pilot.press("alt+down")
        await until(pilot, lambda: app.main_screen.selected == "scout")
    saved = json.loads(plane.home.tui_memory.read_text())
    assert saved == {str(plane.home.socket): "scout"}
    assert stat.S_IMODE(plane.home.tui_memory.stat().st_mode) == 0o600
    assert [path.name for path in plane.home.root.glob(".tui.json*")] == [], "no spare left"

    again = app_for(plane)
    async with again.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: again.main_screen.selected is not None)
        assert again.main_screen.selected == "scout"


async def test_a_remembered_agent_that_is_gone_falls_back_to_the_first(start_plane) -> None:
    plane = await start_plane()
    Memory(plane.home.tui_memory).remember(str(plane.home.socket), "deleted-long-ago")
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected is not None)
        assert app.main_screen.selected == "demo"


def test_a_broken_or_unwritable_file_is_forgotten(tmp_path) -> None:
    path = tmp_path / "tui.json"
    path.write_text("{not json")
    memory = Memory(path)
    assert memory.recall("x") is None
    memory.remember("x", "demo")
    assert memory.recall("x") == "demo"
    path.write_text("[1, 2]")
    assert memory.recall("x") is None
    gone = Memory(tmp_path / "no" / "such" / "dir" / "tui.json")
    gone.remember("x", "demo")  # nothing raised
    assert gone.recall("x") is None
