"""Every scrolling key on a conversation with nothing to scroll: the first
screen a newcomer sees (a fresh `demo`, an empty or a short conversation).

Textual's scroll actions raise `SkipAction` when there is nothing to scroll;
its action dispatch catches that (and lets the key go on to the next
binding), a direct call of the action does not, and the app ended with a
traceback on the first PageUp."""

from __future__ import annotations

import pytest
from textual.widget import Widget

from tests.tui.conftest import feed, settle
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
@pytest.mark.parametrize("where", ["composer", "conversation", "agents"])
async def test_scrolling_keys_on_a_conversation_with_nothing_to_scroll(
    conversation: str, where: str
) -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        pane = app.screen.query_one(ConversationPane)
        pane.show("demo", _conversations()[conversation])
        target: dict[str, type[Widget]] = {
            "composer": Composer,
            "conversation": ConversationPane,
            "agents": AgentList,
        }
        app.screen.query_one(target[where]).focus()
        await settle(pilot)
        for key in KEYS:
            await pilot.press(key)
            await settle(pilot, 2)
        assert app.is_running, "a scrolling key ended the app"
        assert app.return_code is None
        # the app still answers a key: typing lands in the composer
        app.screen.query_one(Composer).focus()
        await pilot.press("x")
        await settle(pilot)
        assert app.screen.query_one(Composer).text.endswith("x")
