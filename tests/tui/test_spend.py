"""The spend screen (ctrl+g): against a real plane through the real link,
and as an SVG snapshot fed a fixed `spend_history` answer."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from plane.wire.protocol import SpendHistory, SpendPoint, Usage
from tests.tui.conftest import feed, settle
from tests.tui.scenes import fleet
from tests.tui.test_live import SIZE, app_for, has_row, type_line, until
from tests.tui.test_snapshots import offline_app
from tui.screens.spend import SpendScreen, top_lines
from tui.widgets.composer import Composer


def shown(app, widget: str) -> str:  # type: ignore[no-untyped-def]
    return str(app.screen.query_one(widget).render())


async def test_ctrl_g_shows_the_selected_agents_spend_and_f_the_fleets(start_plane) -> None:  # type: ignore[no-untyped-def]
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: has_row(app, "scout") and app.main_screen.selected == "demo")
        plane.llm.reply("Spent some.", usage=Usage(input_tokens=300))
        await type_line(pilot, "spend")
        await until(
            pilot, lambda: not plane.crew.workers["demo"].working and plane.llm.pending == 0
        )
        await plane.quiet()
        await pilot.press("ctrl+g")
        await until(pilot, lambda: isinstance(app.screen, SpendScreen))
        await until(pilot, lambda: shown(app, "#hours-total") == "$0.30 spent")
        assert app.screen.query_one("#panel").border_title == "spend · demo"
        assert shown(app, "#days-total") == "$0.30 spent"
        hours = app.screen.query_one("#hours").data
        assert hours is not None and hours[12] == 0.3 and sum(hours) == 0.3  # noon UTC
        spenders = [str(label.render()) for label in app.screen.query("#top .spender")]
        assert spenders == ["demo  ████████████████████████  $0.30"]
        models = [str(label.render()) for label in app.screen.query("#models .spender")]
        assert models == ["scripted-model  ████████████████████████  $0.30"]
        await pilot.press("f")
        await until(
            pilot, lambda: app.screen.query_one("#panel").border_title == "spend · the fleet"
        )
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, SpendScreen))


def test_top_spenders_are_bars_against_the_most_with_what_was_saved() -> None:
    top = [
        SpendPoint(label="burner", spent_usd=Decimal("2"), saved_usd=Decimal("0.31")),
        SpendPoint(label="demo", spent_usd=Decimal("0.5")),
        SpendPoint(label="tiny", spent_usd=Decimal("0.001")),
    ]
    assert top_lines(top) == [
        "burner  ████████████████████████  $2.00  saved $0.31",
        "demo    ██████                    $0.50",
        "tiny    █                         <$0.01",
    ]
    assert top_lines([]) == ["Nobody has spent anything today."]


class _Answers:
    """What the plane answered, frozen (the snapshot's picture must not move)."""

    async def spend_history(self, agent: str | None) -> SpendHistory:
        hourly = {9: "0.12", 10: "0.40", 11: "0.95", 12: "0.30", 14: "1.20", 15: "0.80"}
        saved = {10: "0.05", 11: "0.22", 14: "0.31"}
        return SpendHistory(
            id=1,
            day=date(2025, 3, 14),
            agent=agent,
            hours=[
                SpendPoint(
                    label=f"{h:02d}",
                    spent_usd=Decimal(hourly.get(h, "0")),
                    saved_usd=Decimal(saved.get(h, "0")),
                )
                for h in range(24)
            ],
            days=[
                SpendPoint(
                    label=f"2025-{2 if d < 16 else 3:02d}-{(d + 13) % 28 + 1:02d}",
                    spent_usd=Decimal((d * 37) % 11) / 2,
                    saved_usd=Decimal((d * 17) % 5) / 10,
                )
                for d in range(30)
            ],
            top=[
                SpendPoint(label="demo", spent_usd=Decimal("4.10"), saved_usd=Decimal("0.58")),
                SpendPoint(label="burner", spent_usd=Decimal("2.00")),
                SpendPoint(label="builder", spent_usd=Decimal("1.37"), saved_usd=Decimal("0.1")),
                SpendPoint(label="reviewer", spent_usd=Decimal("0.42")),
            ],
            models=[
                SpendPoint(label="smollm2-135m", spent_usd=Decimal("7.47")),
                SpendPoint(label="claude-haiku-4-5", spent_usd=Decimal("0.42")),
            ],
        )


async def _open_charts(pilot) -> None:  # type: ignore[no-untyped-def]
    pilot.app.screen.query_one(Composer).cursor_blink = False
    feed(pilot.app, fleet())
    await settle(pilot, 6)
    await pilot.app.push_screen(SpendScreen(_Answers(), "demo"))
    await settle(pilot, 6)


def test_spend_charts(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(offline_app(), terminal_size=SIZE, run_before=_open_charts)


def test_spend_charts_light_theme(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def light(pilot) -> None:  # type: ignore[no-untyped-def]
        await _open_charts(pilot)
        pilot.app.theme = "textual-light"
        await settle(pilot)

    assert snap_compare(offline_app(), terminal_size=SIZE, run_before=light)
