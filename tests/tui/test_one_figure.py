"""One figure, one rounding: an agent's spend reads the same in its title,
the fleet line and the `/limit` replies (the title's rule,
`plane.wire.words.spend_against`), on a real plane."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from textual.pilot import Pilot

from plane.wire.protocol import Usage
from plane.wire.words import spend_total
from tests.support.fixtures_plane import CONFIG
from tests.tui.factories import agent
from tests.tui.test_finding import fleet_text
from tests.tui.test_live import SIZE, app_for, pane_lines, row_text, title, type_line, until
from tui.app import PlaneApp
from tui.fleet import Tally

FIGURE = re.compile(r"\$[0-9.,]+")

ODD = Usage(input_tokens=17, cache_read_tokens=5)
"""12 uncached tokens at $0.001 and 5 cached at $0.0001: $0.0125, between cents."""


def test_the_fleet_total_is_worded_as_its_rows_are() -> None:
    one = Tally.of([agent("demo", "0.0057", "0.01"), agent("scout")]).fleet()
    assert one.text() == "2 agents · $0.005 today", "demo's figure, as its title has it"
    over = Tally.of([agent("demo", "0.0125", "0.01")]).fleet()
    assert over.text().endswith("$0.013 today")
    two = Tally.of([agent("demo", "0.0057", "0.01"), agent("scout", "0.02")]).fleet()
    assert two.text().endswith("$0.026 today"), "the digits the rows show"
    assert Tally.of([agent("a", "1.234"), agent("b", "2")]).fleet().text().endswith("$3.23 today")
    assert spend_total([], Decimal("0.004")) == "<$0.01", "deleted agents' spend alone"


@pytest.mark.slow
async def test_title_fleet_line_and_limit_replies_say_one_figure(start_plane) -> None:
    plane = await start_plane()
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        await type_line(pilot, "/limit 0.01")
        plane.llm.reply("Spent.", usage=ODD)
        await type_line(pilot, "spend")
        await until(pilot, lambda: app.store.agents["demo"].spend_today_usd == Decimal("0.0125"))
        await until(pilot, lambda: "$0.013 of $0.01" in title(app))
        await until(pilot, lambda: "$0.013 today" in fleet_text(app))

        for command, ceiling in (("/limit", "$0.01"), ("/limit 5", "$5.00"), ("/limit off", "")):
            await limit_says_the_figures_figure(pilot, app, command, ceiling)


async def limit_says_the_figures_figure(
    pilot: Pilot, app: PlaneApp, command: str, ceiling: str
) -> None:
    """`command`'s reply, the title (once it shows `ceiling`) and the fleet's
    line say the same spend figure."""
    count = len(pane_lines(app))
    await type_line(pilot, command)
    await until(pilot, lambda: len(pane_lines(app)) >= count + 2)
    reply = pane_lines(app)[-1][1]
    await until(pilot, lambda: ceiling in title(app) or not ceiling)
    shown = FIGURE.findall(title(app))[0]
    assert f"{shown} spent today" in reply, (command, reply, title(app))
    await until(pilot, lambda: fleet_text(app).endswith(f"{shown} today"))


@pytest.mark.slow
async def test_an_unpriced_agents_title_and_limit_reply_say_its_spend_as_its_row(
    start_plane,
) -> None:
    """On a model with no known price its calls count $0, which is not what
    they cost: the title and `/limit` say `$?` as its row does, never `$0.00`."""
    plane = await start_plane(CONFIG.replace("  demo: {}", "  demo: {model: other-model}"))
    await plane.send("demo", "/limit off")  # no ceiling: it takes turns, unpriced
    for _ in range(2):
        plane.llm.reply("ok", usage=ODD)
        await plane.turn("demo", "work")
    app = app_for(plane)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.selected == "demo")
        await until(pilot, lambda: row_text(app, "demo") == "○ demo $?")
        assert title(app) == "demo · other-model (unpriced) · $? today, no limit"
        await type_line(pilot, "/limit")
        await until(pilot, lambda: pane_lines(app)[-1][1] == "$? spent today, against no limit.")
        await type_line(pilot, "/limit 5")
        said = "Spending limit set to $5.00 a day. $? spent today, of $5.00 a day."
        await until(pilot, lambda: pane_lines(app)[-1][1] == said)
        await until(pilot, lambda: title(app).startswith("demo · other-model (unpriced) · $? of"))
