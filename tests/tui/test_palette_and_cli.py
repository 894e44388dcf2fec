"""The command palette's plane entries, the `n` key, and `python -m tui`'s arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui.conftest import feed, settle
from tests.tui.factories import agent, snapshot
from tui.__main__ import parse
from tui.app import PlaneApp
from tui.link import Address
from tui.widgets.agent_list import AgentList
from tui.widgets.composer import Composer

SIZE = (100, 30)


@pytest.mark.slow
async def test_the_palette_goes_to_an_agent() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        await pilot.press(*"go to agent scout")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await settle(pilot, 5)
        assert app.screen.query_one(AgentList).selected == "scout"


@pytest.mark.slow
async def test_the_palette_fills_in_a_slash_command() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo")))
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        await pilot.press(*"/limit")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await settle(pilot, 5)
        assert app.main_screen.query_one("#composer", Composer).value == "/limit "


async def test_n_in_the_agent_list_opens_the_form() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo")))
        await settle(pilot)
        await pilot.press("n")  # typed in the input: it is just a letter
        await settle(pilot)
        assert type(app.screen).__name__ == "MainScreen"
        await pilot.press("ctrl+l", "n")
        await settle(pilot)
        assert type(app.screen).__name__ == "NewAgentScreen"


def test_arguments(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PLANE_HOME", str(tmp_path))
    monkeypatch.delenv("PLANE_TOKEN", raising=False)
    assert parse([]) == Address(path=tmp_path.resolve() / "plane.sock")
    assert parse(["--socket", "/x/p.sock"]) == Address(path=Path("/x/p.sock"))
    assert parse(["--tcp", "10.0.0.5:7878", "--token", "t"]) == Address(
        host="10.0.0.5", port=7878, token="t"
    )
    monkeypatch.setenv("PLANE_TOKEN", "from-env")
    assert parse(["--tcp", "h:1"]).token == "from-env"
    monkeypatch.delenv("PLANE_TOKEN")
    with pytest.raises(SystemExit):
        parse(["--tcp", "h:1"])
    with pytest.raises(SystemExit):
        parse(["--tcp", "nowhere", "--token", "t"])
