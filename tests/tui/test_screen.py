"""The main screen fed frames directly, as `PlaneClient` would post them.

These pin how the screen reads what the plane says; the same behaviour
against a real plane is in test_live.py."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from textual.message import Message

from plane.wire.protocol import AgentUpdated, MessageAppended, TextDelta, TurnFinished, Usage
from tests.tui.conftest import drawn_row, feed, row_classes, settle
from tests.tui.factories import agent, cost, message, snapshot
from tui.app import PlaneApp
from tui.widgets.agent_list import AgentList
from tui.widgets.composer import Composer
from tui.widgets.conversation import ConversationPane
from tui.widgets.title_bar import TitleBar

SIZE = (100, 30)


def title(app: PlaneApp) -> str:
    return app.screen.query_one(TitleBar).render().plain


async def test_rows_show_no_figure_at_zero_amber_at_warn_red_at_ceiling() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(
            app,
            snapshot(
                agent("idle", "0"),
                agent("cheap", "1.00"),
                agent("amber", "4.00"),
                agent("red", "5.00", status="held"),
                agent("free", "9.99", None),
            ),
        )
        await settle(pilot)
        assert drawn_row(app, "idle") == "○ idle"
        assert drawn_row(app, "cheap") == "○ cheap $1.00"
        assert drawn_row(app, "amber") == "○ amber $4.00"
        assert drawn_row(app, "red") == "■ red $5.00"
        assert drawn_row(app, "free") == "○ free $9.99"
        levels = {
            name: row_classes(app, name) & {"-warn", "-over"}
            for name in ("idle", "cheap", "amber", "red", "free")
        }
        assert levels == {
            "idle": set(),
            "cheap": set(),
            "amber": {"-warn"},
            "red": {"-over"},
            "free": set(),
        }
        agents = app.screen.query_one(AgentList)
        assert agents.render_line(5).text.strip() == "+ new agent"


async def test_rows_follow_spend_updates_and_the_day_rolling_over() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo", "0"), agent("scout", "0")))
        await settle(pilot)
        feed(app, AgentUpdated(agent=agent("scout", "4.50", status="working")))
        await settle(pilot)
        assert drawn_row(app, "scout") == "● scout $4.50"
        assert row_classes(app, "scout") == {"-warn", "-working"}
        feed(app, AgentUpdated(agent=agent("scout", "5.10", status="held")))
        await settle(pilot)
        assert row_classes(app, "scout") == {"-over", "-held"}
        assert drawn_row(app, "scout") == "■ scout $5.10"
        feed(app, snapshot(agent("demo", "0"), agent("scout", "0")))  # the day rolled
        await settle(pilot)
        assert drawn_row(app, "scout") == "○ scout"
        assert row_classes(app, "scout") == {"-idle"}


async def test_title_bar_says_model_spend_and_limit() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(
            app, snapshot(agent("demo", "4.10"), agent("free", "4.10", None), agent("calm", "1.00"))
        )
        await settle(pilot)
        assert title(app).startswith("demo · smollm2-135m · $4.10 of $5.00 today · resets in 3h")
        await pilot.press("alt+down")
        await settle(pilot)
        assert title(app) == "free · smollm2-135m · $4.10 today, no limit"
        await pilot.press("alt+down")
        await settle(pilot)
        assert title(app) == "calm · smollm2-135m · $1.00 of $5.00 today"


async def test_the_title_of_an_agent_on_an_unpriced_model_never_reads_as_free() -> None:
    """Its calls are counted at $0, which is not their cost: the model says
    so, and its spend is `$?`, as its row says it."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("free", "0", None, model="mystery", price_known=False)))
        await settle(pilot)
        assert title(app) == "free · mystery (unpriced) · $? today, no limit"


async def test_with_several_planes_the_title_says_which_one_runs_the_agent() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("calm", "1.00", plane="plane-b"), agent("solo", "1.00")))
        await settle(pilot)
        assert title(app) == "calm · smollm2-135m · $1.00 of $5.00 today · on plane-b"
        await pilot.press("alt+down")
        await settle(pilot)
        assert title(app) == "solo · smollm2-135m · $1.00 of $5.00 today"


async def test_countdown_runs_from_the_planes_clock_not_this_ones() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        monotonic = [100.0]
        app.store.clock = lambda: monotonic[0]
        feed(app, snapshot(agent("demo", "5", status="held")))  # plane: 20:47:00 UTC
        await settle(pilot)
        assert title(app).endswith("held · resets in 3h 13m")
        monotonic[0] += 60  # a minute passes here, whatever this machine's clock says
        app.main_screen.tick()
        await settle(pilot)
        assert app.store.resets_in() == timedelta(hours=3, minutes=12)
        assert title(app).endswith("held · resets in 3h 12m")


@pytest.mark.parametrize(("cause", "whose"), [("group", "its group"), ("fleet", "the fleet")])
async def test_a_shared_ceiling_of_zero_is_a_pause_with_no_reset(cause, whose) -> None:
    """Held by its group's or the fleet's ceiling of $0.00 (no `resumes_at`:
    the plane says the day's end does not free it), the title says `paused`
    and whose, and promises no `resets in`, as for a ceiling of its own of
    $0.00 and as the conversation says (`a new day does not end a pause`)."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("b", "0.08", "5", status="held", hold_reason=cause)))
        await settle(pilot)
        assert title(app) == f"b · smollm2-135m · $0.08 of $5.00 today · paused by {whose}"


async def test_focus_starts_in_the_input_with_the_first_agent_selected() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        assert isinstance(app.focused, Composer)
        assert app.screen.query_one(AgentList).selected == "demo"
        assert app.screen.query_one(AgentList).cursor == 0


async def test_alt_arrows_in_the_composer_move_between_agents_and_plain_arrows_do_not() -> None:
    posted: list[Message] = []
    app = PlaneApp(None)
    async with app.run_test(size=SIZE, message_hook=posted.append) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout"), agent("third")))
        await settle(pilot)
        await pilot.press("down", "up", "down")  # the composer's own: its lines, its history
        await settle(pilot)
        assert app.screen.query_one(AgentList).selected == "demo"
        posted.clear()
        await pilot.press("alt+down", "alt+down", "alt+up")
        await settle(pilot)
        once = list({id(m): m for m in posted}.values())  # a bubbling message is seen per hop
        chosen = [m.agent for m in once if isinstance(m, AgentList.Selected)]
        assert chosen == ["scout", "third", "scout"]
        assert isinstance(app.focused, Composer)


@pytest.mark.slow
async def test_tab_reaches_the_rows_and_enter_on_new_agent_opens_the_form() -> None:
    posted: list[Message] = []
    app = PlaneApp(None)
    async with app.run_test(size=SIZE, message_hook=posted.append) as pilot:
        feed(app, snapshot(agent("demo")))
        await settle(pilot)
        await pilot.press("ctrl+l", "down", "enter")
        await settle(pilot)
        assert any(isinstance(m, AgentList.NewAgentWanted) for m in posted)
        assert type(app.screen).__name__ == "NewAgentScreen"
        await pilot.press("escape")
        await settle(pilot)
        assert type(app.screen).__name__ == "MainScreen"


async def test_clicking_a_row_selects_it() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        await pilot.click(AgentList, offset=(4, 2))  # inside the border: the second row
        await settle(pilot)
        assert app.screen.query_one(AgentList).selected == "scout"
        assert title(app).startswith("scout ·")


async def test_conversation_shows_every_kind_and_marks_held_messages() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo", "0.42")))
        feed(
            app,
            *[
                MessageAppended(message=m)
                for m in (
                    message("demo", "operator", "what failed in the last build?"),
                    message("demo", "agent", "The linker could not find libssl."),
                    cost("demo", "0.03", 12_400, 11_900, 320),
                    message("demo", "tool", "shell: make -j2 (exit 2)"),
                    message("demo", "ask", "/limit 50"),
                    message("demo", "operator", "are you there?", held=True),
                    message(
                        "demo", "plane", "demo is held at its ceiling; it answers at 00:00 UTC."
                    ),
                )
            ],
        )
        await settle(pilot, 5)
        lines = app.screen.query_one(ConversationPane).messages
        kinds = [line.message.kind for line in lines]
        assert kinds == ["operator", "agent", "cost", "tool", "ask", "operator", "plane"]
        texts = [line.plain(80) for line in lines]
        assert texts[0] == "14:02 you   what failed in the last build?"
        assert texts[1] == "14:02 demo  The linker could not find libssl."
        assert texts[2].strip() == "$0.03 · 12.4k in (11.9k cached) · 320 out"
        assert texts[3] == "14:02 demo  ⚙ shell: make -j2 (exit 2)"
        assert texts[4] == "14:02 demo  ‹ask› /limit 50"
        assert texts[5].startswith("14:02 you   are you there?") and texts[5].endswith(" held")
        assert texts[6].startswith("14:02 plane demo is held at its ceiling;")
        assert not texts[0].endswith("held")


async def test_long_answers_render_markdown_and_short_ones_plain() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo")))
        feed(app, MessageAppended(message=message("demo", "agent", "ok [red]not markup[/]")))
        feed(
            app,
            MessageAppended(
                message=message(
                    "demo",
                    "agent",
                    "## Plan\n\nRead **the log**, then:\n\n- read the log\n"
                    "- fix `ld` flags\n\n```\nmake -j2\n```\n",
                )
            ),
        )
        await settle(pilot, 5)
        plain, rich = app.screen.query_one(ConversationPane).messages
        assert plain.plain(80) == "14:02 demo  ok [red]not markup[/]"
        assert not plain.markdown and rich.markdown
        assert rich.plain(80).splitlines() == [
            "14:02 demo  Plan",
            "            Read the log, then:",
            "            • read the log",
            "            • fix ld flags",
            "",
            "              make -j2",
        ]


async def test_dragging_across_a_message_selects_its_words() -> None:
    """Textual finds where the mouse is in a widget from the widget's `gutter`
    (padding and border); a message line must not mean anything else by it."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo")))
        feed(app, MessageAppended(message=message("demo", "agent", "The linker could not.")))
        await settle(pilot, 5)
        pane = app.screen.query_one(ConversationPane)
        # Inside the border and padding (2 cells, 1 line), past `14:02 demo  ` (12 cells),
        # on the line's row (a short conversation sits at the bottom of the pane).
        y = 1 + (pane.row_of(pane.messages[0]) or 0)
        await pilot.mouse_down(pane, offset=(14, y))
        await pilot.hover(pane, offset=(24, y))
        await pilot.mouse_up(pane, offset=(24, y))
        await settle(pilot)
        assert app.screen.get_selected_text() == "The linker "


def test_markdown_wraps_under_its_own_markers() -> None:
    from tui.markdown_lines import blocks

    found = blocks("1. first\n2. second, much longer\n\n> said\n", lambda name: "")
    assert [(b.first, b.rest, b.content.plain) for b in found] == [
        ("1. ", "   ", "first"),
        ("2. ", "   ", "second, much longer"),
        ("▌ ", "▌ ", "said"),
    ]


async def test_streamed_text_shows_as_it_arrives_then_becomes_the_message() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo", status="working")))
        feed(
            app,
            TextDelta(agent="demo", turn=1, text="The link"),
            TextDelta(agent="demo", turn=1, text="er could"),
        )
        await settle(pilot, 5)
        pane = app.screen.query_one(ConversationPane)
        assert pane.streaming == "The linker could"
        assert "demo  The linker could▍" in pane.plain()
        feed(
            app,
            MessageAppended(message=message("demo", "agent", "The linker could not.")),
            TurnFinished(agent="demo", turn=1, cost_usd=Decimal(0), usage=Usage()),
        )
        await settle(pilot, 5)
        assert pane.streaming is None and "▍" not in pane.plain()
        assert [line.message.text for line in pane.messages] == ["The linker could not."]


async def test_help_is_shown_in_the_pane_and_not_sent() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo")))
        await settle(pilot)
        await pilot.press(*"/help", "enter")
        await settle(pilot)
        notes = app.screen.query_one(ConversationPane).notes
        assert notes and "/limit [AMOUNT|off]" in notes[0]


async def test_typing_a_slash_shows_the_matching_commands() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo")))
        await settle(pilot)
        await pilot.press("/", "l")
        await settle(pilot)
        hint = app.screen.query_one("#hint")
        assert hint.has_class("-shown") and "/limit [AMOUNT|off]" in str(hint.render())
        assert app.screen.query_one(Composer).suggestion == "imit "


async def test_sending_without_a_plane_says_so_in_the_pane() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo")))
        await settle(pilot)
        await pilot.press(*"hello", "enter")
        await settle(pilot, 6)
        notes = app.screen.query_one(ConversationPane).notes
        assert notes == ["Not sent (no connection to the plane): hello"]


@pytest.mark.slow
async def test_tab_moves_between_the_input_the_rows_and_the_conversation() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        seen = []
        for _ in range(3):
            await pilot.press("tab")
            seen.append(app.focused.id if app.focused else None)
        assert seen == ["agents", "conversation", "composer"]
        await pilot.press("shift+tab", "shift+tab", "down")
        await settle(pilot)
        assert app.screen.query_one(AgentList).selected == "scout"


@pytest.mark.slow
async def test_a_long_history_lays_out_the_newest_and_offers_the_rest() -> None:
    from tui.widgets.conversation import WINDOW

    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        history = [message("demo", "operator", f"note {i}") for i in range(WINDOW + 25)]
        app.store.conversation("demo").add(history)
        await pilot.press("alt+down", "alt+up")  # away and back: the pane is drawn from the store
        await settle(pilot, 5)
        pane = app.screen.query_one(ConversationPane)
        shown = [line.message.text for line in pane.messages]
        assert shown == [f"note {i}" for i in range(25, WINDOW + 25)]
        assert (pane.earlier_offered or "").startswith("↑ 25 earlier messages")
        pane.focus()
        await pilot.press("home")  # scroll to the top, where the offer is
        await settle(pilot)
        await pilot.click(pane, offset=(10, 1))  # the offer, at the top
        await settle(pilot, 5)
        shown = [line.message.text for line in pane.messages]
        assert shown == [f"note {i}" for i in range(WINDOW + 25)]
        assert pane.earlier_offered is None
