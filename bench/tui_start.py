"""CPU of the TUI's start and stop, as the tests start it.

    .venv/bin/python bench/tui_start.py [--agents 0,3,100] [--starts 20] [--profile]

A real plane on a temporary home (no model is ever called: the agents sit
idle), N agents in its config; the app connects to it under Textual's
`run_test` at 100x30, as tests/tui/test_live.py does, waits for its first
full frame (every row shown, the first agent's conversation asked for and
drawn), and stops. Each start is measured in CPU-seconds of this process
(`time.process_time`: the plane's side of the connection counts too, a few
ms), over `--starts` starts after one to warm up; the offline app (no plane,
as most TUI tests start it) is measured too. Prints the median and the mean
per start, and, at start, how many widgets are mounted and which of them
the first frame does not show. `--profile` adds a cProfile of one start:
the top calls by cumulative time, and the time spent in each part of
Textual (its own time, by module).

The machine is shared: CPU, not wall-clock, is what moves little with load;
compare trees A/B in turns.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import pstats
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from textual.pilot import Pilot
from textual.widget import Widget

from plane.clock import ManualClock
from plane.config import parse_config
from plane.daemon.server import Plane
from plane.home import Home
from tui.app import PlaneApp
from tui.link import Address, Backoff
from tui.widgets.agent_list import AgentList

SIZE = (100, 30)
NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CONFIG = """
defaults:
  limitUsd: 1
  provider: scripted
  model: scripted-model
providers:
  scripted:
    kind: openai-compatible
    base_url: http://127.0.0.1:9/v1
    models: [scripted-model]
    max_retries: 0
pricing:
  scripted-model: {input: 1000, cached_input: 100, output: 2000}
"""
VERBOSE = False
READY_S = 30.0
"""The first frame must come by then."""


def config(agents: int) -> str:
    lines = "".join(f"\n  agent-{i:03d}: {{}}" for i in range(agents))
    return f"{CONFIG}agents:{lines or ' {}'}\n"


class Started:
    """What one start saw: the widgets mounted, and those not on its first frame."""

    def __init__(self) -> None:
        self.widgets = 0
        self.unseen: list[str] = []


async def first_frame(app: PlaneApp, pilot: Pilot[None], agents: int | None) -> None:
    """Until the rows are shown (`agents`: how many; None offline) and drawn."""
    loop = asyncio.get_running_loop()
    until = loop.time() + READY_S
    rows = app.main_screen.query_one(AgentList)
    while agents is not None and not (
        app.store.day is not None
        and len(rows.names) == agents
        and (agents == 0 or app.main_screen.selected is not None)
    ):
        if loop.time() > until:
            raise SystemExit(f"no first frame within {READY_S}s")
        await pilot.pause(0.005)
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()


def census(app: PlaneApp, seen: Started) -> None:
    widgets = list(app.screen.query("*"))
    shown = app.screen._compositor.visible_widgets
    seen.widgets = len(widgets)
    seen.unseen = [_name(w) for w in widgets if w not in shown]


def _name(widget: Widget) -> str:
    return f"{type(widget).__name__}#{widget.id}" if widget.id else type(widget).__name__


async def one_start(address: Address | None, agents: int | None, seen: Started | None) -> float:
    app = PlaneApp(address, backoff=Backoff(first=0.05, most=0.3))
    gc.collect()  # the last start's garbage is not this one's work
    began = time.process_time()
    async with app.run_test(size=SIZE) as pilot:
        await first_frame(app, pilot, agents)
        if seen is not None:
            census(app, seen)
    return time.process_time() - began


async def starts(root: Path, agents: int | None, count: int, profile: bool) -> None:
    plane = None
    address = None
    if agents is not None:
        home = Home(root / f"home-{agents}")
        plane = Plane(parse_config(config(agents)), home, ManualClock(NOON))
        await plane.startup()
        address = Address(path=home.socket)
    try:
        seen = Started()
        await one_start(address, agents, seen)  # warm: imports, the stylesheet's first parse
        spent = [await one_start(address, agents, None) for _ in range(count)]
        label = "offline" if agents is None else f"{agents} agents"
        if VERBOSE:
            print([round(s * 1000) for s in spent])
        ms = [s * 1000 for s in spent]
        print(
            f"{label:>11}: {statistics.median(ms):6.1f} ms CPU a start (median of {count};"
            f" mean {statistics.mean(ms):.1f}, min {min(ms):.1f}), {seen.widgets} widgets,"
            f" {len(seen.unseen)} not on the first frame"
        )
        print(f"{'':>13}not shown: {', '.join(seen.unseen)}")
        if profile:
            gc.collect()
            profiler = cProfile.Profile()
            profiler.enable()
            await one_start(address, agents, None)
            profiler.disable()
            report(profiler)
    finally:
        if plane is not None:
            plane.stop_event.set()
            await plane.shutdown()


PARTS = [
    ("styling", ("textual/css/stylesheet", "textual/css/styles", "textual/css/_style_properties")),
    ("css parse", ("textual/css/parse", "textual/css/tokenize", "textual/css/tokenizer")),
    ("drawing", ("textual/_compositor", "textual/strip", "textual/_styles_cache", "rich/")),
    ("layout", ("textual/_arrange", "textual/layouts", "textual/_layout", "textual/geometry")),
    ("dom & query", ("textual/dom", "textual/css/query", "textual/css/match", "textual/walk")),
    ("messages", ("textual/message_pump", "textual/message", "textual/_context", "asyncio/")),
    ("widgets", ("textual/widget", "textual/widgets/", "textual/containers", "textual/screen")),
    ("the plane's TUI", ("/tui/",)),
    ("the plane", ("/plane/",)),
]


def report(profiler: cProfile.Profile) -> None:
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(r"textual|/tui/", 25)
    print("\n".join(out.getvalue().splitlines()[6:]))
    own: dict[str, float] = defaultdict(float)
    total = 0.0
    for (path, _line, _name), (_cc, _nc, tottime, _ct, _callers) in vars(stats)["stats"].items():
        total += tottime
        part = next((p for p, keys in PARTS if any(k in path for k in keys)), "other")
        own[part] += tottime
    print("own time by part (profiled, so inflated):")
    for part, spent in sorted(own.items(), key=lambda kv: -kv[1]):
        print(f"  {part:<16} {spent * 1000:7.1f} ms  {spent / total:5.1%}")


async def main(agents: list[int], count: int, profile: bool, offline: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="tui-start-") as root:
        if offline:
            await starts(Path(root), None, count, profile)
        for n in agents:
            await starts(Path(root), n, count, profile)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="0,3,100", help="agents in the plane's config")
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--no-offline", action="store_true")
    args = parser.parse_args()
    numbers = [int(n) for n in args.agents.split(",") if n]
    asyncio.run(main(numbers, args.starts, args.profile, not args.no_offline))
