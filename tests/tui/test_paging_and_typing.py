"""Scrolling back through a long conversation on a real plane (older pages
come from the plane, and what was being read stays put), and typing that
starts in the agent list or the conversation ending up in the composer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from textual import events
from textual.message import Message
from textual.widgets import Input

from plane.wire.protocol import HelloReply, SnapshotReply, encode
from tests.tui.conftest import feed, focused, settle
from tests.tui.factories import agent, message, snapshot
from tests.tui.test_live import SIZE, app_for, has_row, pane_lines, until
from tui.app import PlaneApp
from tui.link import Address, Timeouts
from tui.messages import Failed
from tui.screens.main import HISTORY
from tui.screens.new_agent import NewAgentScreen
from tui.store import Conversation
from tui.widgets.agent_list import AgentList
from tui.widgets.composer import Composer
from tui.widgets.conversation import WINDOW, ConversationPane
from tui.widgets.message_line import MessageLine

OFFER = (10, 1)
"""Where the offer is in the pane scrolled to the top (inside its border and padding)."""
COUNT = HISTORY + 2 * WINDOW + 7
"""More than the first fetch: the rest is two full pages from the plane and a short one."""


async def fill(plane, count: int = COUNT) -> None:
    for n in range(count):
        await plane.services.conversation.append("demo", "operator", f"m{n}")
        await plane.services.conversation.append("scout", "operator", f"s{n}")


def shown(app: PlaneApp) -> list[str]:
    return [text for _, text in pane_lines(app)]


def first_line(app: PlaneApp) -> MessageLine:
    return app.screen.query_one(ConversationPane).messages[0]


def earlier_line(app: PlaneApp) -> str | None:
    return app.screen.query_one(ConversationPane).earlier_offered


def more_than(app: PlaneApp, count: int) -> Callable[[], bool]:
    """Whether more than `count` lines are shown, asked when called."""
    return lambda: len(shown(app)) > count


def on_its_row(pane: ConversationPane, line: MessageLine, row: int | None) -> Callable[[], bool]:
    """Whether `line` is drawn on `row` of the pane, asked when called."""
    return lambda: pane.row_of(line) == row


@pytest.mark.slow
async def test_scrolling_back_pages_in_older_messages_and_keeps_the_view(start_plane) -> None:
    plane = await start_plane()
    await fill(plane)
    everything = [f"m{n}" for n in range(COUNT)]
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: shown(app) == everything[-WINDOW:])
        assert earlier_line(app) == "↑ earlier messages (click, or Enter here)"
        pane = app.screen.query_one(ConversationPane)
        pane.focus()
        await pilot.press("home")  # to the top: nothing loads yet
        await settle(pilot)
        assert shown(app) == everything[-WINDOW:] and pane.scroll_offset.y == 0

        batches = 0
        while earlier_line(app) is not None:
            reading = first_line(app)
            was = (reading.message.text, pane.row_of(reading))
            count = len(shown(app))
            await pilot.press("up")  # further up from the top: the batch before
            await until(pilot, more_than(app, count))
            await until(pilot, on_its_row(pane, reading, was[1]))
            assert reading.message.text == was[0]  # the same line, on the same row
            assert pane.scroll_offset.y > 0, "the new lines are above, to scroll up to"
            assert shown(app) == everything[-len(shown(app)) :], "no gap, nothing twice"
            await pilot.press("home")
            await settle(pilot)
            batches += 1
            assert batches < 20
        assert shown(app) == everything
        assert batches == 6  # two held batches of the first 200, then three pages, the last short
        assert app.store.conversation("demo").from_start


@pytest.mark.slow
async def test_clicking_the_offer_fetches_the_page_before(start_plane) -> None:
    plane = await start_plane()
    await fill(plane, HISTORY + 3)
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(shown(app)) == WINDOW)
        pane = app.screen.query_one(ConversationPane)
        pane.focus()
        while len(shown(app)) < HISTORY:  # the held ones first, by Enter
            count = len(shown(app))
            await pilot.press("enter")
            await until(pilot, more_than(app, count))
        assert earlier_line(app) == "↑ earlier messages (click, or Enter here)"
        await pilot.press("home")
        await settle(pilot)
        await pilot.click(pane, offset=OFFER)
        await until(pilot, lambda: len(shown(app)) == HISTORY + 3)
        assert shown(app) == [f"m{n}" for n in range(HISTORY + 3)]
        assert earlier_line(app) is None


async def test_a_page_the_plane_never_sends_is_reported_as_no_answer_in_time(
    tmp_path: Path,
) -> None:
    """A request that times out raises a `TimeoutError` with no words of its own:
    the operator still reads why no page came, for the newest page as for an
    earlier one."""

    hung_up = asyncio.Event()

    async def answer_only_the_handshake(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        while line := await reader.readline():
            request = json.loads(line)
            if request["type"] == "hello":
                writer.write(encode(HelloReply(id=request["id"], plane_version="test")))
            elif request["type"] == "subscribe":
                reply = SnapshotReply(id=request["id"], snapshot=snapshot(agent("demo")))
                writer.write(encode(reply))
        writer.close()
        hung_up.set()

    socket = tmp_path / "plane.sock"
    server = await asyncio.start_unix_server(answer_only_the_handshake, socket)
    posted: list[Message] = []
    # Not 10 s: the plane's silence is the point, not the wait.
    app = PlaneApp(Address(path=socket), timeouts=Timeouts(request_s=0.2))
    async with server:
        async with app.run_test(size=SIZE, message_hook=posted.append) as pilot:
            await until(pilot, lambda: app.link.connected)
            app.main_screen.load_earlier("demo", 1)
            await until(pilot, lambda: len({m.text for m in posted if isinstance(m, Failed)}) == 2)
        await asyncio.wait_for(hung_up.wait(), 5)  # the app closed its end on the way out
    failures = {m.text for m in posted if isinstance(m, Failed)}
    assert failures == {
        "Earlier messages could not be fetched: no answer in time.",
        # The newest page, asked for on connecting, timed out too: that is said, not dropped.
        "The conversation could not be fetched: no answer in time.",
    }


async def test_a_short_conversation_offers_nothing_earlier(start_plane) -> None:
    plane = await start_plane()
    await fill(plane, 5)
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: shown(app) == [f"m{n}" for n in range(5)])
        assert earlier_line(app) is None
        app.screen.query_one(ConversationPane).focus()
        await pilot.press("up", "home", "pageup")
        await settle(pilot)
        assert shown(app) == [f"m{n}" for n in range(5)]


@pytest.mark.slow
async def test_typing_in_the_agent_list_starts_a_message(start_plane) -> None:
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: has_row(app, "scout") and app.main_screen.selected == "demo")
        await pilot.press("ctrl+l", "down")  # the list's own keys still move it
        await until(pilot, lambda: app.main_screen.selected == "scout")
        assert isinstance(focused(app), AgentList)

        await pilot.press(*"Hi there")
        composer = app.screen.query_one(Composer)
        await until(pilot, lambda: composer.value == "Hi there")
        assert focused(app) is composer
        await pilot.press("enter")
        await until(pilot, lambda: ("operator", "Hi there") in pane_lines(app))
        assert app.main_screen.selected == "scout"


@pytest.mark.slow
async def test_typing_in_the_conversation_starts_a_message_and_its_keys_still_scroll(
    start_plane,
) -> None:
    plane = await start_plane()
    await fill(plane, HISTORY + 3)
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(shown(app)) == WINDOW)
        pane = app.screen.query_one(ConversationPane)
        composer = app.screen.query_one(Composer)
        pane.focus()
        await pilot.press("end", "pageup")  # the pane's own keys still scroll it
        await settle(pilot)
        assert 0 < pane.scroll_offset.y < pane.max_scroll_y
        await pilot.press("home", "up")  # and, from the top, page back
        await until(pilot, lambda: len(shown(app)) == 2 * WINDOW)
        await pilot.press("home")
        await settle(pilot)
        await pilot.press("enter")  # Enter is still the pane's: the next batch
        await until(pilot, lambda: len(shown(app)) == 3 * WINDOW)
        assert focused(app) is pane and composer.value == ""

        await pilot.press(*"Hi there")
        await until(pilot, lambda: composer.value == "Hi there")
        assert focused(app) is composer
        await pilot.press("enter")
        await until(pilot, lambda: ("operator", "Hi there") in pane_lines(app))
        stored = await plane.services.conversation.history("demo", 5)
        assert ("operator", "Hi there") in [(m.kind, m.text) for m in stored]


@pytest.mark.slow
async def test_keys_the_list_binds_keep_their_meaning() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        await pilot.press("ctrl+l", "n")  # `n` is the list's: the new-agent form
        await settle(pilot)
        assert isinstance(app.screen, NewAgentScreen)
        assert app.screen.query_one("#name", Input).value == ""
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("ctrl+l", "down", "up", "x")
        await settle(pilot)
        assert app.main_screen.selected == "demo"
        assert app.screen.query_one(Composer).value == "x"


@pytest.mark.slow
async def test_without_a_plane_the_wheel_and_page_up_lay_out_what_is_held() -> None:
    """Offline, what the client holds is all there is: no offer to fetch more."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        held = [message("demo", "operator", f"n{i}") for i in range(2 * WINDOW + 3)]
        app.store.conversation("demo").add(held)
        await pilot.press("alt+down", "alt+up")
        await settle(pilot, 5)
        assert earlier_line(app) == f"↑ {WINDOW + 3} earlier messages (click, or Enter here)"
        pane = app.screen.query_one(ConversationPane)
        pane.focus()
        await pilot.press("home")
        await settle(pilot)
        wheel = events.MouseScrollUp(pane, 5, 5, 0, -1, 0, False, False, False)
        pane.post_message(wheel)  # the wheel, at the top
        await settle(pilot, 5)
        assert len(pane_lines(app)) == 2 * WINDOW
        assert earlier_line(app) == "↑ 3 earlier messages (click, or Enter here)"
        await pilot.press("home", "pageup")
        await settle(pilot, 5)
        assert [t for _, t in pane_lines(app)] == [m.text for m in held]
        assert earlier_line(app) is None


def test_what_the_client_holds_stays_one_unbroken_stretch() -> None:
    """Paging back starts from the oldest message held, so a gap in what is
    held would be skipped for ever: a full newest page that starts after
    everything held replaces it; one that overlaps joins it."""
    old = [message("demo", "operator", f"old {i}") for i in range(3)]
    newer = [message("demo", "operator", f"new {i}") for i in range(5)]
    conversation = Conversation("demo", loaded=True)
    conversation.newest(old, whole=False)

    conversation.newest(newer[2:], whole=False)  # the plane went on while this client was away
    assert [m.text for m in conversation.ordered()] == ["new 2", "new 3", "new 4"]
    assert conversation.earlier_on_plane

    conversation.newest(newer[1:4], whole=False)  # overlaps: nothing is dropped
    assert [m.text for m in conversation.ordered()] == ["new 1", "new 2", "new 3", "new 4"]

    conversation.earlier(newer[:1], reached_start=True)
    assert [m.text for m in conversation.ordered()] == [f"new {i}" for i in range(5)]
    assert conversation.from_start and not conversation.earlier_on_plane


@pytest.mark.parametrize("counts", [(0, 1, 2), (3, 5, 8)])
async def test_keys_typed_from_the_conversation_reach_the_composer_in_order(
    counts: tuple[int, ...],
) -> None:
    """A terminal's keys arrive one by one while the app is busy: however
    many loop turns fall between two keys, the first one moves the focus and
    none lands after a key typed after it (once seen in a browser:
    "/limi 0.t5" for "/limit 0.5"). Each count of turns in turn on one app,
    from the conversation with an empty composer."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        pane = app.screen.query_one(ConversationPane)
        composer = app.screen.query_one(Composer)
        text = "/limit 0.5 now"
        for turns in counts:
            composer.value = ""
            pane.focus()
            await settle(pilot, 1)
            assert focused(app) is pane and composer.value == "", turns
            for character in text:
                key = "space" if character == " " else character
                app.post_message(events.Key(key, character))
                for _ in range(turns):
                    await asyncio.sleep(0)
            await until(pilot, lambda: len(composer.value) == len(text))
            assert composer.value == text, turns
