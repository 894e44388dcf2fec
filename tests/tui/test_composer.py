"""The composer: a paste keeps every line, ctrl+j starts one, Enter sends
the lot; Up/Down walk what was sent; each agent keeps its own draft; PageUp
and PageDown scroll the conversation from where the operator types."""

from __future__ import annotations

import pytest
from textual import events

from plane.wire.protocol import MessageAppended
from tests.tui.conftest import feed, settle
from tests.tui.factories import agent, message, snapshot
from tests.tui.test_live import SIZE, app_for, pane_lines, until
from tests.tui.test_shown_agent_goes import notices
from tui.app import PlaneApp
from tui.link import Address, Backoff, Timeouts
from tui.screens.main import WAITING
from tui.widgets.composer import Composer
from tui.widgets.conversation import ConversationPane

LOG = 'Traceback (most recent call last):\n  File "build.py", line 3\nImportError: libssl.so.3'


def composer(app: PlaneApp) -> Composer:
    return app.main_screen.query_one(Composer)


def sent_texts(app: PlaneApp) -> list[str]:
    """What the screen sent, as the offline plane's refusal quotes it."""
    prefix = "Not sent (no connection to the plane): "
    notes = app.main_screen.query_one(ConversationPane).notes
    return [n.removeprefix(prefix) for n in notes if n.startswith(prefix)]


async def offline(pilot) -> None:
    feed(pilot.app, snapshot(agent("demo"), agent("scout"), agent("third")))
    await settle(pilot)


async def sent_offline(pilot, text: str) -> None:
    """`text` sent with no plane: refused, and kept in the composer, which is
    then emptied as the operator would, to write the next one."""
    await pilot.press(*text, "enter")
    await until(pilot, lambda: composer(pilot.app).value == text)
    composer(pilot.app).value = ""


async def test_a_message_the_plane_never_got_stays_in_the_composer() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await offline(pilot)
        await pilot.press(*"hello", "enter")
        await until(pilot, lambda: sent_texts(app) == ["hello"])
        assert composer(app).value == "hello", "not sent: kept, to send again"
        assert WAITING not in notices(app), "no link was ever up: refused at once, not waited on"


async def test_a_pasted_log_keeps_every_line_on_a_real_plane(start_plane) -> None:
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        app.post_message(events.Paste(LOG))  # as the terminal's bracketed paste arrives
        await until(pilot, lambda: composer(app).value == LOG)
        assert app.focused is composer(app) and composer(app).size.height == 3  # every line in view
        await pilot.press("enter")
        await until(pilot, lambda: ("operator", LOG) in pane_lines(app))
        stored = await plane.services.conversation.history("demo", 5)
        assert ("operator", LOG) in [(m.kind, m.text) for m in stored]
        assert composer(app).value == ""


@pytest.mark.slow
async def test_a_message_sent_while_the_plane_is_away_never_leaves_the_composer(
    start_plane,
) -> None:
    """The send waits a moment for the link to come back. Meanwhile what was
    written stays where it was written (it was emptied until the plane was
    given up on, as if lost), and Enter again does not send it twice."""
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        await plane.stop()
        await until(pilot, lambda: app.main_screen.lost is not None)
        await pilot.press(*"hello", "enter", "enter")
        await until(pilot, lambda: WAITING in notices(app))  # said at once, not in 3 s
        seen: list[str] = []

        def given_back() -> bool:
            seen.append(composer(app).value)
            return bool(sent_texts(app))

        await until(pilot, given_back)
        await settle(pilot, 6)
        assert set(seen) == {"hello"}, "never emptied before it was sent or given back"
        assert sent_texts(app) == ["hello"] and composer(app).value == "hello"
        await pilot.press("enter")  # now given back: Enter tries again
        await until(pilot, lambda: sent_texts(app) == ["hello", "hello"])


@pytest.mark.slow
async def test_a_message_sent_while_the_plane_restarts_leaves_the_composer_once_taken(
    start_plane,
) -> None:
    plane = await start_plane()
    app = PlaneApp(
        Address(path=plane.home.socket),
        backoff=Backoff(first=0.05, most=0.3),
        timeouts=Timeouts(reconnect_s=60),  # however slow the restart
    )
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        await plane.stop()
        await until(pilot, lambda: app.main_screen.lost is not None)
        await pilot.press(*"hello", "enter")
        await settle(pilot)
        assert composer(app).value == "hello", "not taken yet: still where it was written"
        plane = await start_plane(restart=plane)
        await until(pilot, lambda: ("operator", "hello") in pane_lines(app))
        await until(pilot, lambda: composer(app).value == "")
        assert sent_texts(app) == []


@pytest.mark.slow
async def test_ctrl_j_starts_a_new_line_and_enter_sends_them_all() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await offline(pilot)
        await pilot.press(*"first", "ctrl+j", *"second", "shift+enter", *"third")
        await settle(pilot)
        assert composer(app).value == "first\nsecond\nthird"
        assert sent_texts(app) == []
        await pilot.press("enter")
        await settle(pilot, 6)
        assert sent_texts(app) == ["first\nsecond\nthird"]
        assert composer(app).value == "first\nsecond\nthird", "not sent (no plane): kept"


@pytest.mark.slow
async def test_up_and_down_walk_what_was_sent_and_come_back_to_the_draft() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await offline(pilot)
        for text in ("one", "two"):
            await sent_offline(pilot, text)
        await pilot.press(*"draft")
        await settle(pilot)
        await pilot.press("up")
        assert composer(app).value == "two"
        await pilot.press("up", "up")  # the oldest stays
        assert composer(app).value == "one"
        await pilot.press("down")
        assert composer(app).value == "two"
        await pilot.press("down")
        assert composer(app).value == "draft"
        assert app.main_screen.selected == "demo", "arrows in the composer never switch agent"


async def test_up_inside_a_message_of_several_lines_moves_the_cursor_not_the_history() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await offline(pilot)
        await sent_offline(pilot, "sent")
        await pilot.press(*"a", "ctrl+j", *"b")
        await pilot.press("up")  # from the second line to the first: still the draft
        assert composer(app).value == "a\nb"
        await pilot.press("up")  # from the first line: the history
        assert composer(app).value == "sent"


@pytest.mark.slow
async def test_each_agent_keeps_its_own_draft() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await offline(pilot)
        await pilot.press(*"for demo")
        await pilot.press("alt+down")
        await settle(pilot)
        assert app.main_screen.selected == "scout" and composer(app).value == ""
        await pilot.press(*"for scout")
        await pilot.press("ctrl+l", "up")  # from the list, too
        await settle(pilot)
        assert app.main_screen.selected == "demo" and composer(app).value == "for demo"
        await pilot.press("down", "enter")  # Enter on a row: back to the composer
        await settle(pilot)
        assert app.focused is composer(app) and composer(app).value == "for scout"
        await pilot.press("enter")
        await settle(pilot, 6)
        assert sent_texts(app) == ["for scout"], "only the shown agent's draft is sent"


@pytest.mark.slow
async def test_page_up_and_down_in_the_composer_scroll_the_conversation() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await offline(pilot)
        app.store.conversation("scout").add(
            [message("scout", "operator", f"line {i}") for i in range(50)]
        )
        app.main_screen.select_agent("scout")
        await settle(pilot, 5)
        pane = app.main_screen.query_one(ConversationPane)
        await until(
            pilot, lambda: pane.max_scroll_y > 0 and pane.scroll_offset.y == pane.max_scroll_y
        )
        await pilot.press("pageup")
        await until(pilot, lambda: pane.scroll_offset.y < pane.max_scroll_y)
        assert app.focused is composer(app)
        await pilot.press("pagedown")
        await until(pilot, lambda: pane.scroll_offset.y == pane.max_scroll_y)


async def test_a_message_typed_before_any_agent_exists_stays_in_the_composer() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot())
        await settle(pilot)
        await pilot.press(*"hello", "enter")
        notes = app.main_screen.query_one(ConversationPane).notes
        await until(pilot, lambda: "ctrl+n creates one" in " ".join(notes))
        assert composer(app).value == "hello", "not sent: kept, to send once an agent exists"


@pytest.mark.slow
async def test_sending_while_scrolled_up_brings_the_newest_into_view() -> None:
    """The operator read back, then typed: what they typed, and what answers
    it, is shown, not left below the fold."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await offline(pilot)
        app.store.conversation("scout").add(
            [message("scout", "operator", f"line {i}") for i in range(50)]
        )
        app.main_screen.select_agent("scout")
        pane = app.main_screen.query_one(ConversationPane)
        await until(
            pilot, lambda: pane.max_scroll_y > 0 and pane.scroll_offset.y == pane.max_scroll_y
        )
        await pilot.press("pageup")
        await until(pilot, lambda: pane.scroll_offset.y < pane.max_scroll_y)
        await pilot.press(*"/help", "enter")
        await until(pilot, lambda: pane.notes)
        await until(pilot, lambda: pane.scroll_offset.y == pane.max_scroll_y)
        feed(app, MessageAppended(message=message("scout", "agent", "the answer")))
        await until(pilot, lambda: ("agent", "the answer") in pane_lines(app))
        await until(pilot, lambda: pane.scroll_offset.y == pane.max_scroll_y)
