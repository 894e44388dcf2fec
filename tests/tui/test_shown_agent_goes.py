"""The agent whose conversation is shown goes away while the operator looks
at it: deleted by another client or `plane delete`, or renamed. A deletion
is said (the pane shows another agent's conversation from then on), a
rename is not called one, and what was being written in the composer is
neither lost nor sent to another agent without the operator seeing it."""

from __future__ import annotations

import pytest

from plane.wire import protocol as p
from tests.tui.conftest import feed, settle
from tests.tui.factories import agent, snapshot
from tests.tui.test_live import SIZE, app_for, has_row, pane_lines, until
from tests.tui.test_manage_keys import made, on_list
from tui.app import PlaneApp
from tui.screens.confirm_delete import ConfirmDelete
from tui.widgets.composer import Composer
from tui.widgets.conversation import ConversationPane

DRAFT = "ship the fix tonight"


def notices(app: PlaneApp) -> list[str]:
    """The notices on screen now, as the operator reads them (shown by an app
    run with `notifications=True`)."""
    return [str(toast.render()) for toast in app.screen.query("Toast")]


async def writing_to(pilot, app: PlaneApp, name: str, text: str = DRAFT) -> Composer:
    app.main_screen.select_agent(name)
    await settle(pilot)
    composer = app.main_screen.query_one(Composer)
    composer.focus()
    composer.insert(text)
    await settle(pilot)
    return composer


async def test_the_shown_agent_deleted_elsewhere_is_said_and_the_draft_stays() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        feed(app, snapshot(agent("alice"), agent("bob"), agent("carol")))
        await settle(pilot)
        await writing_to(pilot, app, "bob", "and to bob")
        composer = await writing_to(pilot, app, "alice")
        feed(app, p.AgentRemoved(agent="alice"))
        await settle(pilot, 6)
        assert app.main_screen.selected == "bob"
        assert app.main_screen.query_one(ConversationPane).border_title == "bob"
        [notice] = notices(app)
        assert notice.startswith("alice was deleted."), notice
        assert "not sent" in notice, "the draft's fate is said with the deletion"
        assert composer.value == f"and to bob\n{DRAFT}", "neither draft is lost"


async def test_another_agent_deleted_or_the_shown_one_renamed_says_no_deletion() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        feed(app, snapshot(agent("alice"), agent("bob"), agent("carol")))
        await settle(pilot)
        composer = await writing_to(pilot, app, "alice")
        feed(app, p.AgentRemoved(agent="carol"))
        feed(app, p.AgentRenamed(old="alice", agent=agent("alma")))
        await settle(pilot, 6)
        assert app.main_screen.selected == "alma"
        assert not [n for n in notices(app) if "deleted" in n], notices(app)
        assert composer.value == DRAFT, "the draft follows the rename"


async def test_the_shown_agent_gone_when_the_link_comes_back_is_said_and_the_draft_stays() -> None:
    """Deleted (or renamed) while the TUI was disconnected: no event says so,
    only the snapshot of the reconnect, which no longer lists it. The pane
    moved to another agent with nothing said, and the draft went with it."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        feed(app, snapshot(agent("alice"), agent("bob")))
        await settle(pilot)
        composer = await writing_to(pilot, app, "alice")
        feed(app, snapshot(agent("bob"), agent("carol")))  # the reconnect's
        await settle(pilot, 6)
        assert app.main_screen.selected in ("bob", "carol")
        [notice] = notices(app)
        assert notice.startswith(
            "alice is no longer on the plane: deleted or renamed while disconnected."
        ), notice
        assert "not sent" in notice
        assert composer.value == DRAFT
        await pilot.press("enter")
        await settle(pilot)
        assert composer.value == DRAFT, "the first Enter sends nothing"
        assert notices(app)[-1] == (
            "That was written to alice, which is no longer on the plane: "
            f"Enter again sends it to {app.main_screen.selected}."
        )


@pytest.mark.slow
async def test_a_draft_to_a_deleted_agent_goes_to_the_next_only_on_a_second_enter(
    start_plane,
) -> None:
    plane = await start_plane()
    await made(plane, "alice")
    app = app_for(plane)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: has_row(app, "alice"))
        composer = await writing_to(pilot, app, "alice")
        await plane.runtime.api.handle(p.DeleteAgent(agent="alice"))
        await until(pilot, lambda: not has_row(app, "alice"))
        shown = app.main_screen.selected
        assert shown is not None and shown != "alice"
        await until(pilot, lambda: app.main_screen.query_one(ConversationPane).agent == shown)
        await pilot.press("enter")
        await until(pilot, lambda: any(shown in n and "Enter" in n for n in notices(app)))
        assert composer.value == DRAFT, "kept: the first Enter sends nothing"
        assert ("operator", DRAFT) not in pane_lines(app)
        await pilot.press("enter")
        await until(pilot, lambda: ("operator", DRAFT) in pane_lines(app))
        assert pane_lines(app).count(("operator", DRAFT)) == 1
        assert composer.value == ""


@pytest.mark.slow
async def test_deleted_from_here_it_is_said_once_and_the_draft_stays(start_plane) -> None:
    plane = await start_plane()
    await made(plane, "alice")
    app = app_for(plane)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: has_row(app, "alice"))
        composer = await writing_to(pilot, app, "alice")
        await on_list(pilot, app, "alice")
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDelete))
        await pilot.press("y")
        await until(pilot, lambda: not has_row(app, "alice") and len(notices(app)) == 2)
        assert sorted(notices(app)) == [
            "Deleted alice; its conversation and ledger rows are kept.",
            "What you were writing to alice is still in the composer, not sent.",
        ]
        assert composer.value == DRAFT
