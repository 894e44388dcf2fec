"""The spend screen (ctrl+g), from a real plane with a month of real turns:
demo's charts (spend.svg), then the fleet's (`f`) scrolled to its last 30
days stacked by agent (spend-fleet.svg), and by group (`b` twice:
spend-groups.svg); then it prints that plane's `plane ledger --summary --by
group` and `--by tool`, the README's examples.

    .venv/bin/python screenshots/spend.py

As make.py: a plane in-process on a temporary PLANE_HOME (real SQLite, real
socket), agents answered by the scripted LLM server, the plane's clock moved
by each step. Thirty days of turns go through the plane (the ledger and the
savings it records are the plane's own), some with a long tool output that
compression shortens; then the TUI connects, selects demo and opens the
charts. Written as SVG (and PNG where rsvg-convert is installed).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from make import SIZE, WORK, save  # the screenshots' own helpers
from textual.pilot import Pilot

from plane.clock import ManualClock
from plane.config import parse_config
from plane.daemon.server import Plane
from plane.home import Home
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.scripted_llm import ScriptedLLM
from tui.app import PlaneApp
from tui.link import Address
from tui.screens.spend import SpendScreen
from tui.widgets.composer import Composer

START = datetime(2026, 2, 12, 0, 0, tzinfo=UTC)
"""Thirty days before the day the picture is of (2026-03-14)."""

CONFIG = """
defaults:
  limitUsd: 5
  provider: local
  model: smollm2-135m
providers:
  local:
    kind: openai-compatible
    base_url: {base_url}
    models: [smollm2-135m]
    max_retries: 0
pricing:
  smollm2: {{input: 30, cached_input: 3, output: 120}}
agents:
  demo: {{}}
  builder: {{}}
  reviewer: {{}}
  scout: {{}}
groups:
  product: {{limitUsd: 12, agents: [demo, builder]}}
  review: {{limitUsd: 3, agents: [reviewer]}}
"""
LISTING = 'for i in $(seq 1 {lines}); do echo "Setting up libfoo$i (1.2.$i) ..."; done'


async def turn(
    plane: Plane, llm: ScriptedLLM, agent: str, tokens: int, listing: int = 0, look: bool = False
) -> None:
    """One real turn through the plane; a `listing` of that many lines runs a
    command whose long output compression shortens (what the charts show as
    saved); `look` lists the workspace first (the day by tool's second tool)."""
    if look:
        llm.reply("", tool_calls=[("list_files", {"path": "."})], usage=Usage())
    if listing:
        command = LISTING.format(lines=listing)
        llm.reply("", tool_calls=[("run_command", {"command": command})], usage=Usage())
    llm.reply("Done.", usage=Usage(input_tokens=tokens, cache_read_tokens=tokens // 2))
    runtime = plane.runtime
    assert runtime is not None
    watching = plane.bus.subscribe()
    try:
        await runtime.api.handle(p.Send(agent=agent, text="carry on"))
        while True:
            event = await asyncio.wait_for(watching.next(), 30)
            if isinstance(event, p.TurnFinished) and event.agent == agent:
                break
    finally:
        plane.bus.unsubscribe(watching)
    async with runtime.crew.workers[agent].turn_lock:  # its cost line is written
        pass


async def legend_in_sight(app: PlaneApp, pilot: Pilot[None]) -> None:
    """The spend screen scrolled to its chart's legend, and painted."""
    legend = app.screen.query_one("#legend")
    app.screen.query_one("#panel").scroll_to_widget(legend, animate=False, top=False)
    for _ in range(6):
        await pilot.pause(0.05)


async def month(plane: Plane, clock: ManualClock, llm: ScriptedLLM) -> None:
    """A working month: weekdays busier, a few heavy days, today in bursts."""
    for day in range(30):
        busy = 2 if (day % 7) in (5, 6) else 4 + day % 3
        for n in range(busy):
            await clock.set(START + timedelta(days=day, hours=1 + n * 3 + day % 2))
            listing = 100 + (day * 53) % 400 if n == 1 and day % 3 else 0
            await turn(plane, llm, "demo", 6_000 + (day * 977 + n * 3331) % 9_000, listing)
            await turn(plane, llm, "builder", 3_000 + (day * 613) % 5_000, look=n == 0)
        if day % 4 == 0:
            await turn(plane, llm, "reviewer", 4_000)
        if day % 5 == 2:
            await turn(plane, llm, "scout", 2_500, 150)
    today = START + timedelta(days=30)
    for hour, tokens in ((8, 9_000), (9, 14_000), (11, 6_000), (14, 21_000), (15, 8_000)):
        await clock.set(today.replace(hour=hour))
        await turn(plane, llm, "demo", tokens, 300 if hour in (9, 14) else 0)
        await turn(plane, llm, "builder", tokens // 3, look=hour == 9)
    await clock.set(today.replace(hour=16, minute=5))


async def main() -> None:
    os.environ["TZ"] = "UTC"
    time.tzset()
    # A folder new to this run: nothing an earlier one left is where it starts.
    with (
        tempfile.TemporaryDirectory(prefix="plane-screenshots-spend-", dir=WORK.parent) as work,
        ScriptedLLM() as llm,
    ):
        workdir = Path(work)
        llm.default_reply = "ok"
        clock = ManualClock(START)
        home = Home(workdir)
        plane = Plane(parse_config(CONFIG.format(base_url=llm.base_url)), home, clock)
        await plane.startup()
        try:
            await month(plane, clock, llm)
            app = PlaneApp(Address(path=home.socket))
            app.store.clock = lambda: clock.now().timestamp()
            async with app.run_test(size=SIZE) as pilot:
                while app.main_screen.selected != "demo":
                    await pilot.pause(0.05)
                app.main_screen.query_one(Composer).cursor_blink = False
                await pilot.press("ctrl+g")
                while not (
                    isinstance(app.screen, SpendScreen)
                    and "spent" in str(app.screen.query_one("#days-total").render())
                ):
                    await pilot.pause(0.05)
                for _ in range(6):
                    await pilot.pause(0.05)
                save(app, "spend")
                await pilot.press("f")
                while "spent" not in str(app.screen.query_one("#stack-total").render()):
                    await pilot.pause(0.05)
                for _ in range(6):
                    await pilot.pause(0.05)
                await legend_in_sight(app, pilot)
                save(app, "spend-fleet")
                await pilot.press("b", "b")  # by model, then by group
                while "by group" not in str(app.screen.query_one("#stack-title").render()):
                    await pilot.pause(0.05)
                for _ in range(6):
                    await pilot.pause(0.05)
                await legend_in_sight(app, pilot)
                save(app, "spend-groups")
            summaries(home)
        finally:
            plane.stop_event.set()
            await plane.shutdown()


def summaries(home: Home) -> None:
    """`plane ledger --summary` by group and by tool, on this plane's ledger."""
    day = (START + timedelta(days=30)).date().isoformat()
    for by in ("group", "tool"):
        args = ["ledger", "--summary", "--by", by, "--day", day, "--days", "30"]
        print(f"\n$ plane {' '.join(args)}")
        env = {**os.environ, "PLANE_HOME": str(home.root)}
        shown = subprocess.run(
            [sys.executable, "-m", "plane", *args], env=env, capture_output=True, text=True
        )
        print(shown.stdout or shown.stderr, end="")


if __name__ == "__main__":
    asyncio.run(main())
