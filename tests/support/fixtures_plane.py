"""A real plane for tests: a real SQLite file and socket in a temporary home,
agents on the scripted LLM server, and a clock the test moves.

    async def test_x(start_plane):
        plane = await start_plane()                # default config below
        said = await plane.turn("demo", "hello")   # everything said until the turn ends
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from plane.clock import ManualClock
from plane.config import parse_config
from plane.daemon.server import Plane
from plane.home import Home, read_token
from plane.wire import protocol as p
from plane.wire.client import PlaneClient
from tests.support.migrated import lay_store, migrated
from tests.support.plane_parts import PlaneParts
from tests.support.scripted_llm import ScriptedLLM

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

SCRIPTED = """
providers:
  scripted:
    kind: openai-compatible
    base_url: {base_url}
    models: [scripted-model, other-model]
    max_retries: 0
pricing:
  scripted-model: {input: 1000, cached_input: 100, output: 2000}
"""
"""The scripted provider at test prices: $1000 per 1M input tokens is $0.001
a token, so costs in tests are round."""


def scripted_config(agents: str, *, limit_usd: str = "1", more: str = "") -> str:
    """agents.yaml on the scripted provider (`SCRIPTED`): every agent's
    ceiling `limit_usd`, `agents` the lines under `agents:`, `more` any other
    top-level blocks (a fleet's ceiling, say)."""
    defaults = f"defaults:\n  limitUsd: {limit_usd}\n  provider: scripted\n  model: scripted-model"
    return f"\n{defaults}{SCRIPTED}{more}agents:\n{agents}"


CONFIG = scripted_config("  demo: {}\n  scout: {}\n")


@dataclass
class RunningPlane(PlaneParts):
    plane: Plane
    home: Home
    clock: ManualClock
    llm: ScriptedLLM
    config_text: str
    clients: list[PlaneClient] = field(default_factory=list)
    http: tuple[str, int] | None = None
    """The gateway's listener (`--http`), when it was asked for."""

    @property
    def bus(self):
        return self.plane.bus

    @property
    def token(self) -> str:
        """What the operator's clients present (read from the home, as they do)."""
        token = read_token(self.home.token)
        assert token, "the plane made no token"
        return token

    def hello(self, ident: int = 1) -> bytes:
        """The operator's hello, as a raw line."""
        return p.encode(p.Hello(id=ident, protocol_version=p.PROTOCOL_VERSION, token=self.token))

    async def client(self) -> PlaneClient:
        client = await PlaneClient.connect(self.home.socket)
        self.clients.append(client)
        return client

    async def send(self, agent: str, text: str) -> list[p.ConversationMessage]:
        return (await self.runtime.api.handle(p.Send(agent=agent, text=text))).messages

    async def turn(self, agent: str, text: str, within: float = 20) -> list[p.ConversationMessage]:
        """Send `text` and collect what `agent`'s conversation gets until its
        turn finishes."""
        subscription = self.bus.subscribe()
        try:
            await self.send(agent, text)
            return await self.until_turn_ends(agent, subscription, within)
        finally:
            self.bus.unsubscribe(subscription)

    async def mid_answer(self, agent: str, text: str, begun: str = "Half an ans"):
        """Send `text` to `agent` and return once its answer has begun (the
        scripted model writes `begun`, then stalls for 30 s): a turn in
        flight, to cut, and the subscription that saw it begin (for
        `until_turn_ends`)."""
        self.llm.stall(begun, seconds=30)
        subscription = self.bus.subscribe()
        await self.send(agent, text)
        while not isinstance(await asyncio.wait_for(subscription.next(), 10), p.TextDelta):
            pass
        return subscription

    async def until_turn_ends(self, agent: str, subscription, within: float = 20):
        said: list[p.ConversationMessage] = []

        async def collect() -> None:
            while True:
                event = await subscription.next()
                if isinstance(event, p.MessageAppended) and event.message.agent == agent:
                    said.append(event.message)
                if isinstance(event, p.TurnFinished) and event.agent == agent:
                    return

        await asyncio.wait_for(collect(), within)
        return said

    def stacks(self) -> str:
        """Where each agent's worker is now: for a test that timed out waiting
        on one to say why."""
        lines = []
        runs = {task.get_name(): task for task in asyncio.all_tasks()}
        for name, worker in self.crew.workers.items():
            task = runs.get(f"worker:{name}")
            if task is None:
                continue
            lines.append(f"{name}: idle={worker.idle}")
            awaiting: object = task.get_coro()
            while awaiting is not None:  # down the chain of awaits, outermost first
                frame = getattr(awaiting, "cr_frame", None) or getattr(awaiting, "gi_frame", None)
                if frame is not None:
                    lines.append(
                        f"  {frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}"
                    )
                awaiting = getattr(awaiting, "cr_await", None) or getattr(
                    awaiting, "gi_yieldfrom", None
                )
            if task.done():
                lines.append(f"  done: {task}")
        ownership = self.services.ownership
        lines.append(f"runs here: {'all' if ownership.mine is None else sorted(ownership.mine)}")
        return "\n".join(lines)

    async def quiet(self) -> None:
        """Until no agent is working or has work it may start, and the plane
        has acted on the clock's latest move (`Crew.caught_up`): a day's end
        or a booking due wakes its workers only once the store has answered,
        and workers all idle before that are not yet quiet."""
        for _ in range(2000):
            await asyncio.sleep(0.005)
            if self.crew.caught_up() and all(w.idle for w in self.crew.workers.values()):
                return
        if all(w.idle for w in self.crew.workers.values()):
            raise TimeoutError("the plane has not acted on the clock's latest move")
        raise TimeoutError("agents still working")

    def serve_until_told_to_stop(self) -> asyncio.Task[None]:
        """Serve as `plane serve` does once started: told to stop (`plane stop`),
        the plane shuts down and lets go of its home."""

        async def serve() -> None:
            await self.plane.stop_event.wait()
            await self.plane.shutdown()

        return asyncio.create_task(serve())

    async def stop(self) -> None:
        for client in self.clients:
            await client.close()
        self.clients.clear()
        self.plane.stop_event.set()
        await self.plane.shutdown()


StartPlane = Callable[..., Awaitable[RunningPlane]]


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """The umask most users have (022: what is made is readable by others unless
    made private), whatever the tests run under: a test of the home's modes then
    fails where the plane leaves something readable."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


@pytest.fixture(scope="session")
def migrated_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plane's SQLite file with every migration step run (`migrated`), made
    once per test process; the test planes' homes get a copy (`lay_store`)."""
    return migrated(tmp_path_factory.mktemp("migrated") / "plane.db")


async def launch(
    root: Path,
    llm: ScriptedLLM,
    config_text: str | None = None,
    clock: ManualClock | None = None,
    tcp: tuple[str, int] | None = None,
    http: tuple[str, int] | None = None,
    store: Path | None = None,
) -> RunningPlane:
    """A started plane with its home under `root`; its store a copy of
    `store` when given (`lay_store`)."""
    text = (config_text or CONFIG).replace("{base_url}", llm.base_url)
    home = Home(root / "home")
    lay_store(home, store)
    clock = clock or ManualClock(NOON)
    plane = Plane(parse_config(text), home, clock, tcp=tcp, http=http)
    await plane.startup()
    return RunningPlane(plane, home, clock, llm, config_text or CONFIG, http=http)


@pytest.fixture
async def start_plane(
    tmp_path: Path, scripted_llm: ScriptedLLM, migrated_store: Path
) -> AsyncIterator[StartPlane]:
    """Start a plane; call again with `restart=plane` to stop that one and
    start a new one on the same home (the restart tests)."""
    running: list[RunningPlane] = []

    async def start(
        config_text: str | None = None,
        *,
        clock: ManualClock | None = None,
        restart: RunningPlane | None = None,
        tcp: tuple[str, int] | None = None,
        http: tuple[str, int] | None = None,
    ) -> RunningPlane:
        if restart is not None:
            await restart.stop()
            running.remove(restart)
            config_text = config_text or restart.config_text
            clock = clock or restart.clock
            http = http or restart.http
        started = await launch(
            tmp_path, scripted_llm, config_text, clock, tcp, http, migrated_store
        )
        running.append(started)
        return started

    yield start
    scripted_llm.hang_up()
    for started in running:
        await started.stop()
