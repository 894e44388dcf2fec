"""The command palette's plane entries, the `n` key, and `python -m tui`'s arguments."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.tui.conftest import feed, settle
from tests.tui.factories import agent, snapshot
from tui.__main__ import main, on_a_terminal, parse
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


@pytest.mark.timeout(20)
def test_without_a_terminal_the_tui_says_so_and_does_not_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Its input at its end, the TUI would read nothing at full speed for as long as it lived."""
    monkeypatch.delenv("TEXTUAL_DRIVER", raising=False)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    with pytest.raises(SystemExit) as said:
        main(["--socket", str(tmp_path / "plane.sock")])
    assert said.value.code == (
        "python -m tui: the TUI needs a terminal: `plane status` shows the agents, "
        "`plane web` serves the TUI to a browser."
    )
    monkeypatch.setenv("TEXTUAL_DRIVER", "textual.drivers.web_driver:WebDriver")
    assert on_a_terminal(), "under textual-serve the pipes are its driver's"
