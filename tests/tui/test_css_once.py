"""The test processes parse Textual's CSS once (tests/support/fixtures_textual_css.py):
a second app asks for every source and has none parsed again, and a theme
changed is parsed for its own variables."""

from __future__ import annotations

from tests.support.fixtures_textual_css import counts
from tests.tui.test_live import SIZE
from tui.app import PlaneApp


async def started(app: PlaneApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()


async def test_a_second_app_has_no_source_parsed_again() -> None:
    await started(PlaneApp(None))
    asked, parsed = counts.asked, counts.parsed
    await started(PlaneApp(None))
    assert counts.asked > asked
    assert counts.parsed == parsed


async def test_a_theme_changed_is_parsed_with_its_own_colours() -> None:
    app = PlaneApp(None)
    async with app.run_test(size=SIZE) as pilot:
        dark = app.screen.styles.background
        app.action_toggle_theme()
        await pilot.pause()
        assert app.screen.styles.background != dark
        app.action_toggle_theme()
        await pilot.pause()
        assert app.screen.styles.background == dark
