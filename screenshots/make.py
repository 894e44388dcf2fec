"""Real screenshots of the TUI, from a real plane.

    .venv/bin/python screenshots/make.py

First the shipped `agents.yaml` as a new user gets it: the real embedded
model (llama.cpp's server, SmolLM2-135M) answers a real question, and the
help panel (F1) is shown over it (`embedded`, `help`). Its answer is the
model's own, so that picture changes from run to run.

Then the scripted scenes (captioned "scripted" in the README): a plane
in-process on a temporary PLANE_HOME (real SQLite, real socket), its
agents answered by the scripted LLM server from the tests (a real local
HTTP server speaking OpenAI's protocol; the answers are scripted
here, the tokens and prices are counted by the plane as for any provider).
The plane's clock starts at 20:31 UTC and moves only when a step moves it,
and the TUI counts time on that clock, so the pictures are the same every
run. The app connects over the socket like any client, is driven into each
state by keys, and each screen is written as SVG (Textual's own export; the
README shows these) and, where rsvg-convert is installed (`apt-get install
librsvg2-bin`), PNG too.

The loop scene (`loop`) runs a plane of its own: an agent whose scripted
model reads the same unchanged log over and over, held by the loop guard at
the fifth read.

`--only embedded`, `--only scripted` or `--only loop` makes one scene alone
(the test of these scripts runs the three side by side, each with its own
PLANE_SCREENSHOTS_WORK: where its planes keep their homes).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from textual.widgets import Input

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plane.clock import ManualClock
from plane.config import parse_config
from plane.daemon.server import Plane
from plane.home import Home
from plane.wire.protocol import PauseAgent, Usage
from tests.support.scripted_llm import ScriptedLLM
from tui.app import PlaneApp
from tui.link import Address
from tui.widgets.composer import Composer

HERE = Path(__file__).resolve().parent
OUT = Path(os.environ.get("PLANE_SCREENSHOTS_OUT") or HERE)
"""Where the pictures go: here, or elsewhere for a run that only checks the
scripts still make them (tests/test_screenshots_run.py)."""
WORK = Path(os.environ.get("PLANE_SCREENSHOTS_WORK") or tempfile.gettempdir()) / "plane-screenshots"
"""The scripted scene's plane's home, made anew each run: its path shows in
its connection-lost picture, so it is a fixed one unless a check of the
scripts moves it. The other scenes' planes live in a temporary folder beside
it, new to each run."""
SHIPPED = HERE.parent / "agents.yaml"
QUESTION = "In one sentence: what does a control plane do?"
SIZE = (120, 34)
START = datetime(2026, 3, 14, 20, 31, tzinfo=UTC)

CONFIG = """
defaults:
  limitUsd: 1
  warnRatio: 0.8
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
  scout: {{}}
  builder: {{tools: [set_own_limit]}}
  burner: {{limitUsd: 0.5}}
  reviewer: {{}}
  poet: {{}}
"""
"""The shipped config's notional price for the embedded model; ceilings
small enough that a few turns show amber and red."""


def usage(total: int, cached: int, out: int) -> Usage:
    return Usage(input_tokens=total, cache_read_tokens=cached, output_tokens=out)


class Director:
    """Drives the app and the plane together, one step at a time."""

    def __init__(
        self,
        app: PlaneApp,
        pilot,
        plane: Plane,
        clock: ManualClock,  # type: ignore[no-untyped-def]
        llm: ScriptedLLM | None,
    ) -> None:
        self.app, self.pilot, self.plane, self.clock, self.llm = app, pilot, plane, clock, llm

    async def until(self, ready: Callable[[], object], within: float = 20) -> None:
        deadline = time.monotonic() + within
        while not ready():
            if time.monotonic() > deadline:
                raise TimeoutError(f"screenshots: not within {within}s: {ready}")
            await self.pilot.pause(0.05)
        for _ in range(4):
            await self.pilot.pause()

    def spent(self, agent: str) -> float:
        return float(self.app.store.agents[agent].spend_today_usd)

    def said(self, agent: str, text: str) -> bool:
        return any(m.text == text for m in self.app.store.conversation(agent).ordered())

    async def select(self, agent: str) -> None:
        self.app.main_screen.select_agent(agent)
        await self.until(lambda: self.app.main_screen.selected == agent)

    async def type(self, text: str, minutes: int = 1) -> None:
        """The operator's line, written into the composer at once (a key a
        character takes the Pilot about 60 ms each), then sent with enter."""
        await self.clock.advance(timedelta(minutes=minutes))
        composer = self.app.main_screen.query_one(Composer)
        composer.focus()
        composer.insert(text)
        await self.pilot.press("enter")

    async def turn(self, agent: str, ask: str, answer: str, spent: Usage) -> None:
        """One real turn: the operator types, the scripted model answers."""
        await self.select(agent)
        before = self.spent(agent)
        assert self.llm is not None, "a scripted turn needs the scripted model"
        self.llm.reply(answer, usage=spent)
        await self.type(ask)
        await self.until(lambda: self.spent(agent) > before and self.said(agent, answer))
        await self.until(lambda: self.app.store.agents[agent].status != "working")

    async def shoot(self, name: str) -> None:
        self.app.main_screen.query_one(Composer).cursor_blink = False
        for _ in range(6):
            await self.pilot.pause(0.05)
        save(self.app, name)


def save(app: PlaneApp, name: str) -> None:
    """The app's screen as `name`.svg (and a PNG beside it, to look at)."""
    (OUT / f"{name}.svg").write_text(app.export_screenshot(title="plane"))
    png = to_png(OUT / f"{name}.svg")
    print(f"screenshots/{name}.svg" + (f" + {png.name}" if png else ""))


def to_png(svg: Path) -> Path | None:
    """rsvg-convert draws Textual's SVG faithfully once told to keep its
    spaces (xml:space), which it otherwise trims at the start of each run."""
    if shutil.which("rsvg-convert") is None:
        print("  (no PNG: apt-get install librsvg2-bin for rsvg-convert)")
        return None
    png = svg.with_suffix(".png")
    text = svg.read_text().replace("<svg ", '<svg xml:space="preserve" ', 1)
    subprocess.run(
        ["rsvg-convert", "-f", "png", "-z", "1", "-o", str(png)], input=text.encode(), check=True
    )
    return png


async def embedded_scenes(workdir: Path) -> None:
    """The shipped config on the real embedded model: one real turn, then F1."""
    clock = ManualClock(START)
    home = Home(workdir / "embedded")
    plane = Plane(parse_config(SHIPPED.read_text()), home, clock)
    await plane.startup()
    try:
        app = PlaneApp(Address(path=home.socket))
        app.store.clock = lambda: clock.now().timestamp()
        async with app.run_test(size=SIZE) as pilot:
            d = Director(app, pilot, plane, clock, None)
            await d.until(lambda: d.app.main_screen.selected == "demo", within=60)
            await d.type(QUESTION)
            await d.until(lambda: d.said("demo", QUESTION), within=60)
            await d.until(
                lambda: (
                    any(m.kind == "cost" for m in d.app.store.conversation("demo").ordered())
                    and d.app.store.agents["demo"].status != "working"
                ),
                within=300,
            )
            await d.shoot("embedded")
            await d.pilot.press("f1")
            await d.until(lambda: type(d.app.screen).__name__ == "HelpScreen")
            await d.shoot("help")
            await d.pilot.press("escape")
    finally:
        plane.stop_event.set()
        await plane.shutdown()


async def scenes(d: Director) -> None:
    await d.until(lambda: len(d.app.store.agents) == 6 and d.app.main_screen.selected == "demo")
    await d.app.link.request(PauseAgent(agent="poet", paused=True))  # a row of its own
    await d.until(lambda: d.app.store.agents["poet"].status == "paused")

    await d.turn(
        "builder",
        "run the test suite and tell me what broke",
        "Two failures, both in `test_ledger.py`: the rollover test expects "
        "00:00 UTC but the fixture clock is local.",
        usage(41_800, 36_200, 310),
    )
    await d.select("builder")
    d.llm.reply("", tool_calls=[("set_own_limit", {"usd": "5"})], usage=usage(9_800, 8_900, 40))
    d.llm.reply(
        "Asked for $5.00 a day; the plane refused, so I stop here until you decide.",
        usage=usage(10_300, 9_700, 60),
    )
    await d.type("finish the flaky-test hunt even if it costs more")
    await d.until(
        lambda: d.said(
            "builder", "Asked for $5.00 a day; the plane refused, so I stop here until you decide."
        )
    )
    await d.until(lambda: d.app.store.agents["builder"].status != "working")
    await d.shoot("ask")

    await d.select("reviewer")
    await d.type("/limit off")
    await d.until(lambda: d.app.store.agents["reviewer"].limit_usd is None)
    await d.turn(
        "reviewer",
        "review the diff in PR 41",
        "Looks right. One nit: `resets_at` is computed twice; keep the one in the clock module.",
        usage(22_900, 20_100, 240),
    )

    await d.turn(
        "burner",
        "crawl the docs site and summarise each page",
        "Crawled 40 pages; summaries follow in batches.",
        usage(16_000, 2_000, 1_900),
    )
    await d.until(lambda: d.app.store.agents["burner"].status == "held")
    await d.type("also check the sitemap", minutes=3)
    await d.until(lambda: d.said("burner", "also check the sitemap"))

    await d.turn(
        "demo",
        "summarise yesterday's incidents",
        "Two: the nightly build (linker) and a 5-minute API timeout at 03:10.",
        usage(14_200, 6_000, 280),
    )
    await d.turn(
        "demo",
        "what failed in the last build?",
        "The linker could not find `libssl`: the build image lost `libssl-dev` "
        "when the base moved to bookworm.\n\n- add `libssl-dev` to the Dockerfile\n"
        "- pin the base image digest",
        usage(16_400, 9_900, 320),
    )
    await d.turn(
        "demo",
        "open a PR with both fixes",
        "Opened #212: `Dockerfile: add libssl-dev, pin base digest`.",
        usage(17_100, 10_200, 150),
    )
    await d.select("demo")
    await d.type("/limit")
    await d.until(
        lambda: (
            d.said("demo", "/limit")
            and d.app.store.conversation("demo").ordered()[-1].kind == "plane"
        )
    )
    await d.type("/limit 1.50")
    await d.until(
        lambda: (
            d.app.store.agents["demo"].limit_usd is not None
            and float(d.app.store.agents["demo"].limit_usd) == 1.5
        )
    )
    await d.type("/limit 1")
    await d.until(lambda: float(d.app.store.agents["demo"].limit_usd or 0) == 1.0)
    await d.shoot("main")

    d.app.theme = "textual-light"
    await d.shoot("main-light")
    d.app.theme = "textual-dark"

    await d.select("burner")
    await d.shoot("held")

    await d.select("demo")
    await d.pilot.press("ctrl+n")
    await d.until(lambda: type(d.app.screen).__name__ == "NewAgentScreen")
    await d.pilot.press(*"scout", "enter")
    await d.until(lambda: d.app.screen.query_one("#error").has_class("-shown"))
    d.app.screen.query_one("#name", Input).cursor_blink = False
    await d.shoot("new-agent")
    await d.pilot.press("escape")

    d.plane.stop_event.set()
    await d.plane.shutdown()
    await d.until(lambda: d.app.main_screen.lost is not None)
    await d.shoot("connection-lost")


LOOP_CONFIG = """
defaults:
  limitUsd: 5
  provider: local
  model: claude-sonnet-4-5
providers:
  local:
    kind: openai-compatible
    base_url: {base_url}
    models: [claude-sonnet-4-5]
    max_retries: 0
pricing:
  claude-sonnet-4-5: {{input: 3, cached_input: 0.3, output: 15}}
agents:
  deployer: {{}}
  triage: {{}}
  docs: {{}}
"""
"""The loop scene: a mid-sized model's prices, a $5.00 ceiling each."""


async def loop_scene(workdir: Path) -> None:
    """A held loop: the scripted model reads the same unchanged log again
    and again; the guard holds it at the fifth read, long before its ceiling."""
    with ScriptedLLM() as llm:
        clock = ManualClock(START)
        home = Home(workdir / "loop")
        plane = Plane(parse_config(LOOP_CONFIG.format(base_url=llm.base_url)), home, clock)
        await plane.startup()
        try:
            assert plane.runtime is not None
            roster = plane.runtime.services.roster
            workspace = roster.get("deployer").workspace
            workspace.mkdir(parents=True, exist_ok=True)  # its first turn would make it
            log = workspace / "deploy.log"
            log.write_text("step 3/7: waiting for the canary to report healthy\n")
            app = PlaneApp(Address(path=home.socket))
            app.store.clock = lambda: clock.now().timestamp()
            async with app.run_test(size=SIZE) as pilot:
                d = Director(app, pilot, plane, clock, llm)
                await d.until(lambda: len(d.app.store.agents) == 3)
                await d.turn(
                    "triage",
                    "label the new issues",
                    "Labelled 6 issues: 4 bugs, 2 questions.",
                    usage(12_400, 9_800, 220),
                )
                for _ in range(8):  # a model that reads the same log whatever it sees
                    llm.reply(
                        "Checking the deploy again.",
                        tool_calls=[("read_file", {"path": "deploy.log"})],
                        usage=usage(18_600, 15_200, 90),
                    )
                await d.select("deployer")
                await d.type("watch the deploy and tell me when the canary is healthy")
                await d.until(lambda: d.app.store.agents["deployer"].status == "held")
                await d.until(
                    lambda: d.app.store.conversation("deployer").ordered()[-1].kind == "plane"
                )
                await d.shoot("loop")
        finally:
            plane.stop_event.set()
            await plane.shutdown()


async def main(only: str | None = None) -> None:
    os.environ["TZ"] = "UTC"
    time.tzset()
    # The planes whose path shows in no picture: in a folder new to this run.
    with tempfile.TemporaryDirectory(prefix="plane-screenshots-", dir=WORK.parent) as scratch:
        for scene, make in (("embedded", embedded_scenes), ("loop", loop_scene)):
            if only in (None, scene):
                await make(Path(scratch))
    if only in (None, "scripted"):
        await scripted_scenes(fresh(WORK))


def fresh(folder: Path) -> Path:
    """`folder`, made anew and empty: nothing an earlier run left there (one
    that crashed keeps its plane's store and workspaces) is where this run
    starts. One that cannot be removed (another user's) stops the run
    rather than being reused."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(mode=0o700, parents=True)
    return folder


async def scripted_scenes(workdir: Path) -> None:
    """The scripted scenes on one plane whose clock the steps move."""
    with ScriptedLLM() as llm:
        llm.default_reply = "ok"
        clock = ManualClock(START)
        home = Home(workdir)  # a fixed path: it shows in the connection-lost picture
        plane = Plane(parse_config(CONFIG.format(base_url=llm.base_url)), home, clock)
        await plane.startup()
        try:
            app = PlaneApp(Address(path=home.socket))
            # The TUI counts the plane's time on from the last snapshot with its
            # own clock; here the plane's clock jumps minutes per step, so the
            # TUI counts on the plane's, or the title would trail the notices.
            app.store.clock = lambda: clock.now().timestamp()
            async with app.run_test(size=SIZE) as pilot:
                await scenes(Director(app, pilot, plane, clock, llm))
        finally:
            plane.stop_event.set()
            await plane.shutdown()
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", choices=["embedded", "loop", "scripted"], help="make this scene alone"
    )
    asyncio.run(main(parser.parse_args().only))
