"""A form, the help or the charts over the conversation: the text behind
them is dimmed to near the background, so the eye is on the panel and no
half-read sentence shows on either side of it (at 60% it read plainly)."""

from __future__ import annotations

import re

import pytest
from textual.color import Color

from tests.tui.conftest import feed, settle
from tests.tui.factories import agent, message, snapshot
from tui.app import PlaneApp
from tui.widgets.conversation import ConversationPane

SIZE = (120, 30)
WORD = "zanzibar"
"""A word only the conversation behind the panel says."""


def contrast(a: Color, b: Color) -> float:
    """WCAG's contrast ratio of two colours (1: the same, 21: black on white)."""
    light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def _luminance(color: Color) -> float:
    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(color.r) + 0.7152 * channel(color.g) + 0.0722 * channel(color.b)


def _text_colours(svg: str, word: str) -> list[Color]:
    """The colours the screenshot draws `word` in."""
    styles = dict(re.findall(r"\.(terminal-\d+-r\d+) \{ fill: (#[0-9a-f]{6})", svg))
    found = re.findall(r'<text class="(terminal-\d+-r\d+)"[^>]*>([^<]*)</text>', svg)
    return [Color.parse(styles[cls]) for cls, text in found if word in text.replace("&#160;", " ")]


PANELS = ["ctrl+n", "f1", "ctrl+g"]
"""The new-agent form, the help and the charts: each opened over the
conversation in turn, on one app a theme, and closed with Esc."""


@pytest.mark.slow  # 1.5-1.6 s alone: three panels opened in turn, four screenshots read
@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
async def test_the_conversation_behind_a_panel_is_dimmed_nearly_away(theme: str) -> None:
    """The app started in the theme: switched to it once started, the light
    one restyled and redrew everything a second time."""
    app = PlaneApp(None)
    app.theme = theme
    async with app.run_test(size=SIZE) as pilot:
        assert app.current_theme.name == theme
        feed(app, snapshot(agent("demo"), agent("scout")))
        await settle(pilot)
        said = f"{WORD} " * 40
        app.screen.query_one(ConversationPane).show("demo", [message("demo", "agent", said)])
        await settle(pilot)
        background = Color.parse(app.theme_variables["background"])
        before = _text_colours(app.export_screenshot(), WORD)
        assert before and all(contrast(c, background) > 3 for c in before)
        for key in PANELS:
            await pilot.press(key)
            await settle(pilot)
            assert app.screen is not app.main_screen, f"{key} opens its panel"
            behind = _text_colours(app.export_screenshot(), WORD)
            assert behind, f"the panel of {key} leaves some of the conversation in view"
            assert all(contrast(c, background) < 1.3 for c in behind), (
                key,
                [round(contrast(c, background), 2) for c in behind],
            )
            await pilot.press("escape")
            await settle(pilot)
            assert app.screen is app.main_screen, f"Esc closes the panel of {key}"
