"""What an arrow key in the agent list costs, counted (not timed: the times
are bench/tui.py's, at 1,000 agents and 200 updates a second): it redraws
the two rows it moves between, in the same paint as the title and the
conversation of the agent it reaches, tells the footer nothing when no key came
or went, sets no composer text that is already there, and the agent shown
is written down once the selection rests, not on every key. After a
snapshot the heap is out of the garbage collector's full passes."""

from __future__ import annotations

import gc

import pytest

from tests.tui.conftest import feed, settle
from tests.tui.factories import agent, snapshot
from tests.tui.test_live import SIZE, app_for, until
from tui import app as app_module
from tui import heap
from tui.app import PlaneApp
from tui.memory import Memory
from tui.widgets.agent_list import AgentList
from tui.widgets.composer import Composer
from tui.widgets.title_bar import TitleBar


def thirty() -> PlaneApp:
    app = PlaneApp(None)
    feed(app, snapshot(*(agent(f"agent-{n:02}") for n in range(30))))
    return app


async def on_list(pilot, app: PlaneApp) -> AgentList:
    await settle(pilot)
    await pilot.press("ctrl+l")
    await settle(pilot)
    return app.main_screen.query_one(AgentList)


@pytest.mark.slow
async def test_an_arrow_key_redraws_the_two_rows_it_moves_between(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = thirty()
    async with app.run_test(size=SIZE) as pilot:
        rows = await on_list(pilot, app)
        drawn: list[int] = []
        render_line = AgentList.render_line

        def counted(self: AgentList, y: int):
            drawn.append(y)
            return render_line(self, y)

        monkeypatch.setattr(AgentList, "render_line", counted)
        await pilot.press("down")
        await settle(pilot)
        assert app.main_screen.selected == "agent-01"
        assert sorted(set(drawn)) == [0, 1], f"lines drawn again: {sorted(set(drawn))}"
        assert rows.size.height > 20  # the whole list was there to be drawn again


@pytest.mark.slow
async def test_an_arrow_key_moves_the_row_and_the_title_in_one_paint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A paint with the cursor on the new row under the old agent's title was
    followed by the rest one or two frames later (30 ms of a key's 40)."""
    app = thirty()
    async with app.run_test(size=SIZE) as pilot:
        rows = await on_list(pilot, app)
        title = app.main_screen.query_one(TitleBar)
        painted: list[tuple[str, str | None]] = []
        display = PlaneApp._display

        def noted(self: PlaneApp, screen, renderable) -> None:
            display(self, screen, renderable)
            if renderable is not None:
                shown = title.agent.name if title.agent is not None else None
                painted.append((rows.names[rows.cursor], shown))

        monkeypatch.setattr(PlaneApp, "_display", noted)
        for key in ("down", "down", "down", "up"):
            await pilot.press(key)
            await settle(pilot)
        assert app.main_screen.selected == "agent-02"
        assert painted, "no paint was seen"
        assert [p for p in painted if p[0] != p[1]] == [], "a row moved without its title"


@pytest.mark.slow
async def test_moving_between_agents_with_the_same_keys_leaves_the_footer_alone() -> None:
    app = thirty()
    async with app.run_test(size=SIZE) as pilot:
        await on_list(pilot, app)
        await pilot.press("down")  # the first move from the list may tell it once
        await settle(pilot)
        told: list[object] = []
        app.main_screen.bindings_updated_signal.subscribe(app.main_screen, told.append)
        await pilot.press("down", "down", "up")
        await settle(pilot)
        assert app.main_screen.selected == "agent-02"
        assert told == [], "the footer rebuilds itself whole each time it is told"


@pytest.mark.slow
async def test_moving_between_agents_with_no_drafts_sets_no_composer_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = thirty()
    async with app.run_test(size=SIZE) as pilot:
        await on_list(pilot, app)
        loads: list[str] = []
        load_text = Composer.load_text

        def counted(self: Composer, text: str) -> None:
            loads.append(text)
            load_text(self, text)

        monkeypatch.setattr(Composer, "load_text", counted)
        await pilot.press("down", "down")
        await settle(pilot)
        assert app.main_screen.selected == "agent-02"
        assert loads == []


@pytest.mark.slow
async def test_a_draft_still_follows_its_agent_and_undo_stays_with_it() -> None:
    app = thirty()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        composer = app.main_screen.query_one(Composer)
        composer.focus()
        await pilot.press("h", "i", "backspace", "backspace")  # typed to agent-00, then taken back
        app.main_screen.select_agent("agent-01")
        await settle(pilot)
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert composer.value == "", "undo brought back what was typed to another agent"
        await pilot.press("y", "o")
        app.main_screen.select_agent("agent-00")
        await settle(pilot)
        assert composer.value == ""
        app.main_screen.select_agent("agent-01")
        await settle(pilot)
        assert composer.value == "yo"


@pytest.mark.slow
async def test_the_agent_shown_is_written_down_once_the_selection_rests(
    start_plane,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Long enough that three keys come inside it on a loaded machine (at 0.2 s
    # a shared two-core machine once spaced them further apart).
    monkeypatch.setattr(app_module, "REMEMBER_S", 1.5)
    written: list[str] = []
    remember = Memory.remember

    def counted(self: Memory, address: str, agent: str) -> None:
        written.append(agent)
        remember(self, address, agent)

    monkeypatch.setattr(Memory, "remember", counted)
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        await pilot.pause(1.6)
        written.clear()
        await pilot.press("alt+down", "alt+up", "alt+down")
        assert written == [], "written on a key, not once the selection rested"
        await until(pilot, lambda: written == ["scout"], within=10)
        await pilot.press("alt+up")
    assert written == ["scout", "demo"], "what was shown at quitting is kept"
    assert Memory(plane.home.tui_memory).recall(str(plane.home.socket)) == "demo"


@pytest.mark.slow
async def test_after_a_snapshot_the_heap_is_out_of_the_collectors_full_passes(
    app_freezes: None,
) -> None:
    assert gc.get_freeze_count() == 0
    app = thirty()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert len(app.main_screen.query_one(AgentList).names) == 30
        assert gc.get_freeze_count() > 0


async def test_full_passes_are_the_apps_own_just_after_a_screen_update(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The collector makes no full pass of its own while the app runs (one
    landed in a key's work, the p99 of bench/tui.py); the app makes them,
    after a screen update, and gives the collector its thresholds back."""
    monkeypatch.setattr(heap, "FULL_PASS_S", 0.05)
    before = gc.get_threshold()
    full: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            full.append(1)

    app = thirty()
    gc.callbacks.append(seen)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert gc.get_threshold()[2] == heap.NEVER
            full.clear()
            await until(pilot, lambda: len(full) >= 2)
    finally:
        gc.callbacks.remove(seen)
    assert gc.get_threshold() == before
