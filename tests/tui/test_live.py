"""The TUI against a real plane: a real SQLite file and socket in a temporary
home, agents answered by the scripted LLM server, the plane's clock at noon
UTC. Nothing here is faked between the screen and the plane.

Prices in the fixture's config make a token cost $0.001 on input, so
`input_tokens=800` is $0.80: amber against the default $1.00 ceiling.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from datetime import timedelta

import pytest

from plane.wire.protocol import Usage
from tests.tui.conftest import drawn_row, row_classes, settle
from tui.app import PlaneApp
from tui.link import Address, Backoff
from tui.widgets.agent_list import AgentList
from tui.widgets.connection_banner import ConnectionBanner
from tui.widgets.conversation import ConversationPane
from tui.widgets.title_bar import TitleBar

SIZE = (100, 30)


async def until(pilot, ready: Callable[[], object], within: float = 15.0) -> None:
    """Let the app and the plane run until `ready()` holds."""
    for _ in range(int(within / 0.01)):
        if ready():
            await settle(pilot)
            return
        await pilot.pause(0.01)
    raise AssertionError(f"not within {within}s: {ready}")


def app_for(plane) -> PlaneApp:
    return PlaneApp(Address(path=plane.home.socket), backoff=Backoff(first=0.05, most=0.3))


def has_row(app: PlaneApp, name: str) -> bool:
    return name in app.main_screen.query_one(AgentList).names


row_text = drawn_row


def title(app: PlaneApp) -> str:
    return app.screen.query_one(TitleBar).render().plain


def pane_lines(app: PlaneApp) -> list[tuple[str, str]]:
    return [
        (line.message.kind, line.message.text)
        for line in app.screen.query_one(ConversationPane).messages
    ]


async def type_line(pilot, text: str) -> None:
    await pilot.press(*text, "enter")


@pytest.mark.slow
async def test_rows_no_figure_at_zero_amber_at_80_red_at_100_and_the_title(
    start_plane, scripted_llm
) -> None:
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: has_row(app, "scout") and app.main_screen.selected == "demo")
        assert row_text(app, "demo") == "○ demo" and row_text(app, "scout") == "○ scout"
        assert title(app) == "demo · scripted-model · $0.00 of $1.00 today"

        scripted_llm.reply("The linker lost libssl.", usage=Usage(input_tokens=800))
        await type_line(pilot, "what failed?")
        await until(pilot, lambda: row_text(app, "demo").endswith("$0.80"))
        assert row_classes(app, "demo") == {"-warn", "-idle"} or row_classes(app, "demo") == {
            "-warn",
            "-working",
        }
        assert "$" not in row_text(app, "scout")
        await until(pilot, lambda: "resets in" in title(app))
        assert title(app).startswith("demo · scripted-model · $0.80 of $1.00 today · resets in ")
        assert title(app).endswith(("12h 00m", "11h 59m"))
        await until(pilot, lambda: ("agent", "The linker lost libssl.") in pane_lines(app))
        assert ("operator", "what failed?") in pane_lines(app)
        assert any(kind == "cost" for kind, _ in pane_lines(app))

        scripted_llm.reply("Fixed.", usage=Usage(input_tokens=200))
        await type_line(pilot, "fix it")
        await until(pilot, lambda: row_text(app, "demo").endswith("$1.00"))
        await until(pilot, lambda: "-over" in row_classes(app, "demo"))
        assert "-warn" not in row_classes(app, "demo")
        await until(pilot, lambda: row_text(app, "demo").startswith("■"))  # held
        assert title(app).startswith("demo · scripted-model · $1.00 of $1.00 today · held")

        await type_line(pilot, "are you there?")
        pane = app.screen.query_one(ConversationPane)
        await until(pilot, lambda: any(line.message.held for line in pane.messages))
        held = [line for line in pane.messages if line.message.held]
        assert held[0].message.text == "are you there?" and held[0].plain().endswith(" held")


@pytest.mark.slow
async def test_limit_shows_both_halves_in_the_pane(start_plane) -> None:
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        await type_line(pilot, "/limit 5")
        expected = [
            ("operator", "/limit 5"),
            ("plane", "Spending limit set to $5.00 a day. $0.00 spent today, of $5.00 a day."),
        ]
        await until(pilot, lambda: pane_lines(app)[-2:] == expected)
        await until(pilot, lambda: title(app).endswith("$0.00 of $5.00 today"))
        await type_line(pilot, "/limit off")
        await until(
            pilot,
            lambda: (
                pane_lines(app)[-1]
                == ("plane", "Spending limit removed. $0.00 spent today, against no limit.")
            ),
        )
        await until(pilot, lambda: title(app).endswith("$0.00 today, no limit"))


@pytest.mark.slow
async def test_creating_an_agent_from_the_keyboard_adds_a_row_with_the_default_ceiling(
    start_plane,
) -> None:
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        await pilot.press("ctrl+n")
        await until(pilot, lambda: type(app.screen).__name__ == "NewAgentScreen")

        await type_line(pilot, "demo")  # taken: the plane's sentence, inline
        error = app.screen.query_one("#error")
        await until(pilot, lambda: error.has_class("-shown"))
        assert "demo" in str(error.render())
        assert type(app.screen).__name__ == "NewAgentScreen"

        await pilot.press(*["backspace"] * 4)
        await type_line(pilot, "Bad Name!")  # invalid: also the plane's sentence
        await until(pilot, lambda: "demo" not in str(error.render()))
        assert error.has_class("-shown") and str(error.render())

        await pilot.press(*["backspace"] * 9)
        await type_line(pilot, "helper")
        await until(pilot, lambda: has_row(app, "helper"))
        assert type(app.screen).__name__ == "MainScreen"
        assert app.main_screen.selected == "helper"
        assert app.store.agents["helper"].limit_usd == 1  # defaults.limitUsd
        assert title(app) == "helper · scripted-model · $0.00 of $1.00 today"
        names = app.main_screen.query_one(AgentList).names
        assert names == ["demo", "scout", "helper"]
        assert app.focused is app.main_screen.query_one("#composer")

    plane = await start_plane(restart=plane)  # it survives a restart of the plane
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: has_row(app, "helper"))


@pytest.mark.slow
async def test_the_plane_restarting_is_survived(start_plane, scripted_llm) -> None:
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        await type_line(pilot, "/limit 3")
        await until(pilot, lambda: title(app).endswith("of $3.00 today"))
        banner = app.screen.query_one(ConnectionBanner)

        await plane.stop()
        await until(pilot, lambda: banner.has_class("-lost"))
        assert "Reconnecting" in str(banner.render())

        plane = await start_plane(restart=plane)
        await until(pilot, lambda: not banner.has_class("-lost"))
        await until(pilot, lambda: ("operator", "/limit 3") in pane_lines(app))  # resynced
        assert title(app).endswith("of $3.00 today")  # the limit persisted
        scripted_llm.reply("back", usage=Usage(input_tokens=100))
        await type_line(pilot, "still there?")
        await until(pilot, lambda: ("agent", "back") in pane_lines(app))
        await until(pilot, lambda: row_text(app, "demo").endswith("$0.10"))


async def test_no_plane_running_says_how_to_start_one(tmp_path) -> None:
    """A banner that only says the plane is not running leaves the operator
    waiting on a retry that cannot succeed: it says what starts one. Not
    "`plane` starts it": typed beside this TUI, `plane` opens a second one;
    run after leaving this one, it starts the plane and opens the TUI again."""
    app = PlaneApp(Address(path=tmp_path / "plane.sock"), backoff=Backoff(first=0.05, most=0.3))
    async with app.run_test(size=SIZE) as pilot:
        banner = app.screen.query_one(ConnectionBanner)
        await until(pilot, lambda: banner.has_class("-lost"))
        said = str(banner.render())
        assert (
            "The plane is not running; quit (ctrl+q) and run `plane`, which starts it in the"
            " background and opens the TUI again."
        ) in said, said
        assert "Reconnecting" in said


async def test_no_plane_on_another_machine_says_what_starts_it_there() -> None:
    """`plane` here would start a plane here, not the one the TUI was pointed at."""
    with socket.socket() as spare:  # a port nothing listens on once it is closed
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]
    app = PlaneApp(Address.tcp(f"127.0.0.1:{port}", "t"), backoff=Backoff(first=0.05, most=0.3))
    async with app.run_test(size=SIZE) as pilot:
        banner = app.screen.query_one(ConnectionBanner)
        await until(pilot, lambda: banner.has_class("-lost"))
        said = str(banner.render())
        assert "The plane is not running; `plane serve --tcp` on its machine starts it." in said


@pytest.mark.slow
async def test_the_day_rolling_over_clears_every_figure(start_plane, scripted_llm) -> None:
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        scripted_llm.reply("ok", usage=Usage(input_tokens=900))
        await type_line(pilot, "spend")
        await until(pilot, lambda: row_text(app, "demo").endswith("$0.90"))
        await plane.clock.advance(timedelta(hours=12, seconds=1))
        await until(pilot, lambda: row_text(app, "demo") == "○ demo")
        assert title(app) == "demo · scripted-model · $0.00 of $1.00 today"


@pytest.mark.slow
async def test_arrows_and_the_mouse_select_agents_on_a_real_plane(start_plane) -> None:
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        await pilot.press("alt+down")
        await until(pilot, lambda: title(app).startswith("scout ·"))
        await pilot.click(AgentList, offset=(4, 1))  # inside the border: the first row
        await until(pilot, lambda: app.screen.query_one(AgentList).selected == "demo")
        assert title(app).startswith("demo ·")


async def test_tcp_with_the_token_connects_and_a_wrong_token_is_shown(
    start_plane, unused_tcp_port
) -> None:
    plane = await start_plane(tcp=("127.0.0.1", unused_tcp_port))
    token = (plane.home.root / "token").read_text().strip()
    app = PlaneApp(Address(host="127.0.0.1", port=unused_tcp_port, token=token))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: has_row(app, "scout"))
        assert title(app) == "demo · scripted-model · $0.00 of $1.00 today"

    app = PlaneApp(
        Address(host="127.0.0.1", port=unused_tcp_port, token="wrong"),
        backoff=Backoff(first=0.05, most=0.3),
    )
    async with app.run_test(size=SIZE) as pilot:
        banner = app.screen.query_one(ConnectionBanner)
        await until(pilot, lambda: banner.has_class("-lost"))
        assert "token" in str(banner.render()).lower()
        assert not app.store.agents


@pytest.mark.slow
async def test_an_answer_streams_into_the_pane_before_it_is_whole(
    start_plane, scripted_llm
) -> None:
    """Whole, an answer replaces its streaming text; caught mid-stream (the
    provider stalls after a few words), the pane shows those words already."""
    plane = await start_plane()
    app = app_for(plane)
    streamed: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        app.store.streaming.subscribe(
            app.main_screen, lambda s: streamed.append(s.text), immediate=True
        )
        scripted_llm.reply("A short answer.", usage=Usage(input_tokens=5))
        await type_line(pilot, "hi")
        await until(pilot, lambda: ("agent", "A short answer.") in pane_lines(app))
        assert app.screen.query_one(ConversationPane).streaming is None
        assert streamed[-1] == ""  # the streaming text gave way to the whole message

        scripted_llm.stall("A long answer, streamed", seconds=30)
        await type_line(pilot, "go")
        await until(pilot, lambda: streamed[-1] == "A long answer, streamed")
        assert app.screen.query_one(ConversationPane).streaming is not None
        assert ("agent", "A long answer, streamed") not in pane_lines(app)  # not whole yet


@pytest.mark.slow
async def test_new_from_the_tui_starts_a_new_model_session_as_the_readme_says(
    start_plane, scripted_llm
) -> None:
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        scripted_llm.reply("Hello.")
        await type_line(pilot, "hi")
        await until(pilot, lambda: ("agent", "Hello.") in pane_lines(app))
        await type_line(pilot, "/new")
        await until(pilot, lambda: pane_lines(app)[-1][1].startswith("New session: "))
        assert pane_lines(app)[-2] == ("operator", "/new")
        assert app.screen is app.main_screen  # no new-agent form
