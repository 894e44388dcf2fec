"""The conversation pane draws its own lines (Textual's line API): no widget
per message, and everything a widget per message did still works, the
cursor Tab walks through the lines that open, a click on one, what lands
above an answer streaming in, the lines fitting the pane as it narrows."""

from __future__ import annotations

from plane.wire.protocol import MessageAppended, TextDelta
from tests.tui.conftest import feed, focused, settle
from tests.tui.factories import agent, message, snapshot
from tests.tui.test_live import SIZE
from tui.app import PlaneApp
from tui.widgets.agent_list import AgentList
from tui.widgets.composer import Composer
from tui.widgets.conversation import WINDOW, ConversationPane


def pane_of(app: PlaneApp) -> ConversationPane:
    return app.main_screen.query_one(ConversationPane)


def view(pane: ConversationPane) -> list[str]:
    """The pane's lines as painted, top to bottom."""
    height = pane.scrollable_content_region.height
    return [pane.render_line(y).text.rstrip() for y in range(height)]


async def test_a_long_history_is_drawn_by_the_pane_itself_with_no_widget_per_message() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        said = [message("demo", "operator", f"note {i}") for i in range(2 * WINDOW)]
        app.store.conversation("demo").add(said)
        await pilot.press("alt+down", "alt+up")  # away and back: drawn from the store
        await settle(pilot, 5)
        pane = pane_of(app)
        assert len(pane.messages) == WINDOW
        assert not pane.children, "no widget per message"
        assert view(pane)[-1] == f"14:02 you   note {2 * WINDOW - 1}", "anchored to the newest"


async def test_a_short_conversation_sits_at_the_bottom_of_the_pane() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo")))
        feed(app, MessageAppended(message=message("demo", "operator", "hello")))
        await settle(pilot, 5)
        lines = view(pane_of(app))
        assert lines[-1] == "14:02 you   hello" and not any(lines[:-1])


async def test_tab_and_shift_tab_walk_the_lines_that_open_and_enter_opens_one() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo")))
        await settle(pilot)
        said = [
            message("demo", "operator", "look"),
            message("demo", "tool", "grep → 3 matches\na\nb\nc"),
            message("demo", "agent", "Found three."),
            message("demo", "tool", "ls → 2 files\nx\ny"),
            message("demo", "agent", "And two files."),
        ]
        feed(app, *[MessageAppended(message=m) for m in said])
        await settle(pilot)
        pane = pane_of(app)
        first, second = [line for line in pane.messages if line.folds]
        assert isinstance(focused(app), Composer)
        await pilot.press("shift+tab")  # from the composer: the newest line that opens
        assert focused(app) is pane and pane.cursor is second
        await pilot.press("shift+tab")
        assert focused(app) is pane and pane.cursor is first
        await pilot.press("enter")
        assert first.expanded and "14:02 demo  ⚙ grep → 3 matches" in pane.plain()
        assert [line.strip() for line in first.plain().splitlines()[1:]] == ["a", "b", "c"]
        await pilot.press("shift+tab", "shift+tab")  # the pane itself, then on to the agents
        assert isinstance(focused(app), AgentList)
        await pilot.press("tab")  # back: the newest line in view that opens
        assert focused(app) is pane and pane.cursor is second
        await pilot.press("tab")  # past the newest: the composer
        assert isinstance(focused(app), Composer)


async def test_a_click_on_a_line_that_folds_opens_and_closes_it() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo")))
        feed(app, MessageAppended(message=message("demo", "tool", "ls → 2 files\nx\ny")))
        await settle(pilot, 5)
        pane = pane_of(app)
        tool = pane.messages[0]
        folded = view(pane)[-2:]
        assert folded == ["14:02 demo  ⚙ ls → 2 files", "            2 more lines · Enter to open"]
        row = pane.row_of(tool)
        assert row is not None
        await pilot.click(pane, offset=(14, 1 + row))  # inside the border and padding
        await settle(pilot)
        assert tool.expanded and view(pane)[-3:] == [
            "14:02 demo  ⚙ ls → 2 files",
            "            x",
            "            y",
        ]
        row = pane.row_of(tool)
        assert row is not None
        await pilot.click(pane, offset=(14, 1 + row))
        await settle(pilot)
        assert not tool.expanded and view(pane)[-2:] == folded


async def test_notes_and_messages_land_above_an_answer_streaming_in() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo", status="working")))
        feed(app, TextDelta(agent="demo", turn=1, text="Thinking about it"))
        await settle(pilot, 5)
        pane = pane_of(app)
        pane.note("A note of this client's own.")
        feed(app, MessageAppended(message=message("demo", "operator", "and another thing")))
        await settle(pilot, 5)
        assert [line for line in view(pane) if line][-3:] == [
            "      A note of this client's own.",
            "14:02 you   and another thing",
            "      demo  Thinking about it▍",
        ]


async def test_lines_fit_the_pane_when_its_scrollbar_comes_and_when_it_narrows() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo")))
        feed(app, MessageAppended(message=message("demo", "agent", "short")))
        await settle(pilot, 5)
        pane = pane_of(app)
        assert not pane.show_vertical_scrollbar
        room = pane.scrollable_content_region.width - len("14:02 demo  ")
        said = [message("demo", "agent", "y" * room + " end") for _ in range(20)]
        feed(app, *[MessageAppended(message=m) for m in said])
        await settle(pilot, 5)
        assert pane.show_vertical_scrollbar  # a cell narrower: the word no longer fits
        for size in (None, (70, 30)):
            if size is not None:
                await pilot.resize_terminal(*size)
                await settle(pilot, 5)
            newest = pane.messages[-1].plain(pane.scrollable_content_region.width)
            assert view(pane)[-len(newest.splitlines()) :] == newest.splitlines()


async def test_the_offer_of_earlier_messages_is_underlined_under_the_mouse() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        said = [message("demo", "operator", f"note {i}") for i in range(WINDOW + 1)]
        app.store.conversation("demo").add(said)
        await pilot.press("alt+down", "alt+up")
        await settle(pilot, 5)
        pane = pane_of(app)
        pane.scroll_home(animate=False, immediate=True)
        await settle(pilot)

        def underlined() -> bool:
            strip = pane.render_line(0)
            assert strip.text.strip().startswith("↑ 1 earlier message")
            return any(s.style is not None and s.style.underline for s in strip if s.text.strip())

        assert not underlined()
        await pilot.hover(pane, offset=(10, 1))  # the offer, inside the border and padding
        await settle(pilot)
        assert underlined()
        await pilot.hover(pane, offset=(10, 3))  # a message
        await settle(pilot)
        assert not underlined()
