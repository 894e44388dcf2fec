"""Every scrolling key on a conversation with nothing to scroll: the first
screen a newcomer sees (a fresh `demo`, an empty or a short conversation).

Textual's scroll actions raise `SkipAction` when there is nothing to scroll;
its action dispatch catches that (and lets the key go on to the next
binding), a direct call of the action does not, and the app ended with a
traceback on the first PageUp."""

from __future__ import annotations

import pytest
from textual import events
from textual.widget import Widget

from tests.tui.conftest import feed, focused, settle
from tests.tui.factories import agent, message, snapshot
from tui.app import PlaneApp
from tui.widgets.agent_list import AgentList
from tui.widgets.composer import Composer
from tui.widgets.conversation import ConversationPane

SIZE = (100, 30)
KEYS = ("pageup", "pagedown", "up", "down", "home", "end", "ctrl+pageup", "ctrl+pagedown")


def _conversations() -> dict[str, list]:
    return {
        "empty": [],
        "short": [message("demo", "operator", "hello"), message("demo", "agent", "hi")],
    }


@pytest.mark.parametrize("conversation", ["empty", "short"])
async def test_scrolling_keys_on_a_conversation_with_nothing_to_scroll(conversation: str) -> None:
    """The focus in each place in turn, on one app: a key that ended it
    leaves it ended for that place's asserts."""
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        screen = app.main_screen
        pane = screen.query_one(ConversationPane)
        composer = screen.query_one(Composer)
        target: dict[str, type[Widget]] = {
            "composer": Composer,
            "conversation": ConversationPane,
            "agents": AgentList,
        }
        said = _conversations()[conversation]
        for where, kind in target.items():
            case = f"the focus in the {where}"
            screen.select_agent("demo")  # the agents' keys moved the selection
            await settle(pilot, 1)
            pane.show("demo", said)
            widget = screen.query_one(kind)
            widget.focus()
            await settle(pilot, 1)
            assert focused(app) is widget and pane.agent == "demo", case
            for key in KEYS:  # as the terminal sends them, one after another
                app.post_message(events.Key(key, None))
            await settle(pilot)
            assert app.is_running, f"a scrolling key ended the app ({case})"
            assert app.return_code is None, case
            # the app still answers a key: typing lands in the composer
            composer.focus()
            composer.value = ""
            await pilot.press("x")
            assert composer.text == "x", case
