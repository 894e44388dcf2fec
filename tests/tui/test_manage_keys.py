"""The operator's keys for managing agents, driven with Pilot against a real
plane: on the focused list `d` (with a confirmation), `p`, `r`, `e`; Esc and
ctrl+c in the composer interrupt a running turn. Elsewhere the letters are
typed, and with no turn running Esc keeps its meaning."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from decimal import Decimal

import pytest
from textual.widgets import Input, Select, TextArea

from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_plane import CONFIG
from tests.tui.test_live import SIZE, app_for, has_row, pane_lines, row_text, title, until
from tui.app import PlaneApp
from tui.screens.confirm_delete import ConfirmDelete
from tui.screens.edit_agent import EditAgent
from tui.screens.rename_agent import RenameAgent
from tui.widgets.agent_list import AgentList
from tui.widgets.composer import Composer

ROOMY_LIMIT = ("limitUsd: 1", "limitUsd: 9")


async def on_list(pilot, app: PlaneApp, agent: str) -> None:
    """Focus the list with `agent` selected."""
    await until(pilot, lambda: has_row(app, agent))
    agents = app.main_screen.query_one(AgentList)
    agents.focus()
    agents.select(agent)
    await until(pilot, lambda: app.main_screen.selected == agent)


def footer_keys(app: PlaneApp) -> dict[str, str]:
    return {
        key: active.binding.description
        for key, active in app.screen.active_bindings.items()
        if active.binding.show
    }


def notified(app: PlaneApp, said: str) -> Callable[[], bool]:
    """Whether a notification says `said`, asked when called."""
    return lambda: said in [n.message for n in app._notifications]


async def made(plane, name: str = "poet") -> None:
    await plane.runtime.api.handle(
        p.NewAgent(name=name, model="scripted-model", role="writes verse")
    )


async def test_the_keys_are_on_the_list_and_in_the_footer_only_there(start_plane) -> None:
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await on_list(pilot, app, "demo")
        keys = footer_keys(app)
        assert {keys[k] for k in "dpre"} == {"Delete", "Pause/resume", "Rename", "Edit"}
        app.main_screen.query_one(Composer).focus()
        await pilot.pause()
        assert not set("dpre") & set(footer_keys(app)), "not bound in the composer"
        await pilot.press("d", "p", "r", "e")
        assert app.main_screen.query_one(Composer).value == "dpre"


async def test_p_pauses_and_resumes_and_the_row_and_title_say_so(start_plane) -> None:
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await on_list(pilot, app, "demo")
        await pilot.press("p")
        await until(pilot, lambda: row_text(app, "demo") == "‖ demo")
        assert title(app) == "demo · scripted-model · $0.00 of $1.00 today · paused"
        assert plane.crew.workers["demo"].spec.paused
        assert plane.services.gate.ceilings.of("demo") == Decimal(1), "the ceiling is kept"
        await pilot.press("p")
        await until(pilot, lambda: row_text(app, "demo") == "○ demo")
        assert not plane.crew.workers["demo"].spec.paused


@pytest.mark.slow
async def test_d_asks_first_and_deletes_only_on_yes(start_plane) -> None:
    plane = await start_plane()
    await made(plane)
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await on_list(pilot, app, "poet")
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDelete))
        await pilot.press("enter")  # Cancel has the focus: Enter alone keeps it
        await until(pilot, lambda: not isinstance(app.screen, ConfirmDelete))
        assert "poet" in plane.crew.workers and has_row(app, "poet")

        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDelete))
        await pilot.press("y")
        await until(pilot, lambda: not has_row(app, "poet"))
        assert "poet" not in plane.crew.workers


async def test_d_or_r_on_a_file_agent_says_why_at_once_and_opens_no_form(start_plane) -> None:
    """`d`, then `r`, on one plane and one app."""
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        for key, words in [("d", "remove its block"), ("r", "rename its block")]:
            await on_list(pilot, app, "demo")
            await pilot.press(key)
            said = f"demo comes from agents.yaml: {words} there and restart the plane."
            await until(pilot, notified(app, said))
            assert not isinstance(app.screen, ConfirmDelete | RenameAgent), "no form to fail in"
            assert "demo" in plane.crew.workers, key


@pytest.mark.slow
async def test_r_renames_and_the_row_follows(start_plane) -> None:
    plane = await start_plane()
    await made(plane)
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await on_list(pilot, app, "poet")
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, RenameAgent))
        field = app.screen.query_one("#new-name", Input)
        assert field.value == "poet"
        field.value = "demo"  # taken: the plane's sentence, the form open
        await pilot.press("enter")
        error = app.screen.query_one("#error")
        await until(pilot, lambda: "already exists" in str(error.render()))
        field.value = "bard"
        await pilot.press("enter")
        await until(pilot, lambda: has_row(app, "bard") and not has_row(app, "poet"))
        await until(pilot, lambda: app.main_screen.selected == "bard")
        names = app.main_screen.query_one(AgentList).names
        assert names == ["demo", "scout", "bard"], "it keeps its place"
        await until(
            pilot, lambda: ("plane", "Renamed from poet by the operator.") in pane_lines(app)
        )


async def edit_form(pilot, app: PlaneApp, agent: str) -> EditAgent:
    """`agent`'s edit form, opened with `e` from its row."""
    await on_list(pilot, app, agent)
    await pilot.press("e")
    await until(pilot, lambda: isinstance(app.screen, EditAgent))
    assert isinstance(app.screen, EditAgent)
    return app.screen


@pytest.mark.slow
async def test_e_edits_what_changed_and_a_bad_value_changes_nothing(start_plane) -> None:
    plane = await start_plane()
    await made(plane)
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        form = await edit_form(pilot, app, "poet")
        assert form.query_one("#role", TextArea).text == "writes verse"
        assert form.query_one("#tools", Input).value == "all"
        assert form.query_one("#limit", Input).value == "1"
        form.query_one("#model", Select).value = "other-model"
        form.query_one("#limit", Input).value = "-1"
        await pilot.press("ctrl+s")
        error = form.query_one("#error")
        await until(pilot, lambda: "can't be negative" in str(error.render()))
        assert plane.crew.workers["poet"].spec.model == "scripted-model", "nothing changed"

        form.query_one("#limit", Input).value = "$2.50"
        form.query_one("#tools", Input).value = "read_file, grep"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not isinstance(app.screen, EditAgent))
        spec = plane.crew.workers["poet"].spec
        assert (spec.model, spec.tools, spec.role) == (
            "other-model",
            ("read_file", "grep"),
            "writes verse",
        )
        assert plane.services.gate.ceilings.of("poet") == Decimal("2.5")
        await until(pilot, lambda: "other-model" in title(app))


@pytest.mark.slow
async def test_the_edit_form_takes_and_shows_read_only_as_the_new_agent_form_does(
    start_plane,
) -> None:
    plane = await start_plane()
    await made(plane)
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        form = await edit_form(pilot, app, "poet")
        assert "read-only" in str(form.query("Label")[2].render())
        form.query_one("#tools", Input).value = "read-only"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not isinstance(app.screen, EditAgent))
        assert plane.crew.workers["poet"].spec.tools == p.READ_ONLY_TOOLS
        app.main_screen.query_one(AgentList).focus()
        form = await edit_form(pilot, app, "poet")
        assert form.query_one("#tools", Input).value == "read-only"


async def test_e_on_a_gateway_agent_edits_only_its_limit(start_plane) -> None:
    plane = await start_plane(CONFIG + "  cc: {gateway: {}}\n")
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        form = await edit_form(pilot, app, "cc")
        assert not form.query("#role, #model, #tools"), "the client chooses those"
        assert form.focused is form.query_one("#limit", Input)
        form.query_one("#limit", Input).value = "2.5"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not isinstance(app.screen, EditAgent))
        assert plane.services.gate.ceilings.of("cc") == Decimal("2.5")


async def interrupted_from_the_composer(start_plane, key: str) -> None:
    plane = await start_plane(CONFIG.replace(*ROOMY_LIMIT))
    plane.llm.stall("Half an ans", seconds=30)
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        assert "escape" not in footer_keys(app), "no turn: nothing to interrupt"
        await pilot.press(*"a long question", "enter")
        await until(pilot, lambda: row_text(app, "demo").startswith("●"))
        await until(pilot, lambda: footer_keys(app).get("escape") == "Interrupt")
        await asyncio.sleep(0.3)  # the stream has begun
        assert app.focused is app.main_screen.query_one(Composer)
        await pilot.press(key)
        await until(
            pilot,
            lambda: any(
                kind == "plane" and text.startswith("Interrupted by the operator. The cut-off")
                for kind, text in pane_lines(app)
            ),
        )
        await until(pilot, lambda: row_text(app, "demo").startswith("○"))
        [cut] = await plane.services.ledger.entries(plane.clock.now().date())
        assert (cut.status, cut.estimated) == ("interrupted", True)


@pytest.mark.slow
async def test_escape_in_the_composer_interrupts_the_running_turn(start_plane) -> None:
    await interrupted_from_the_composer(start_plane, "escape")


@pytest.mark.slow
async def test_ctrl_c_in_the_composer_interrupts_the_running_turn(start_plane) -> None:
    await interrupted_from_the_composer(start_plane, "ctrl+c")


async def test_a_renamed_or_deleted_agent_moves_or_leaves_every_open_tui(start_plane) -> None:
    """Another client's change reaches this one as events."""
    plane = await start_plane()
    await made(plane, "poet")
    await made(plane, "bard")
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: has_row(app, "bard"))
        client = await plane.client()
        await client.request(p.RenameAgent(agent="poet", new_name="muse"))
        await client.request(p.DeleteAgent(agent="bard"))
        await until(pilot, lambda: has_row(app, "muse") and not has_row(app, "bard"))
        assert app.main_screen.query_one(AgentList).names == ["demo", "scout", "muse"]
        plane.llm.reply("verse", usage=Usage(input_tokens=10))
        await plane.turn("muse", "sing")
        await until(pilot, lambda: row_text(app, "muse").endswith("$0.01"))
