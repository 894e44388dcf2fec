"""The embedded model's child is supervised: a real llama.cpp child killed
with SIGKILL comes back on its port, a call meanwhile waits for it, a call it
was answering ends as any cut call does, a child that cannot start is retried
at a bounded pace with one clear error per call, and stopping leaves nothing.

Each test runs its own model: the session's shared one is never killed. Times
here are failure bounds only; no assertion depends on how fast anything is.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from plane.agents.metering import metered_call
from plane.agents.services import Ownership, Services
from plane.clock import ManualClock
from plane.config import Price
from plane.errors import ProviderError
from plane.money.ledger import Ledger
from plane.money.pricing import Pricer
from plane.providers.base import ChatMessage, CompletionRequest
from plane.providers.http import RetryPolicy
from plane.providers.local import EmbeddedModel, find_gguf
from plane.providers.openai import OpenAIProvider
from plane.providers.supervise import Backoff
from plane.store.sqlite import SqliteDatabase
from tests.support.fixtures_plane import NOON

pytestmark = pytest.mark.embedded  # starts the real embedded model itself

MODEL = "smollm2-135m"
BOUND_S = 60
"""How long anything may take before the test fails; never a measurement."""


def ask(text: str = "Say hello.", *, tokens: int = 12) -> CompletionRequest:
    return CompletionRequest(
        model=MODEL,
        system="You are brief.",
        messages=(ChatMessage("user", text),),
        max_output_tokens=tokens,
        temperature=0,
    )


STORY = ask("Tell a long story.", tokens=400)
"""Greedy, SmolLM2 tells it to the last of its 400 tokens: seconds of stream to cut."""


def supervisor_lines(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "plane.providers.supervise" and r.levelno == level
    ]


async def until(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not condition():
        assert time.monotonic() < deadline, f"not within {BOUND_S} s: {what}"
        await asyncio.sleep(0.01)


def kill(model: EmbeddedModel) -> int:
    pid = model.pid
    assert pid is not None and model.supervisor.ready
    os.kill(pid, signal.SIGKILL)
    return pid


async def noticed(model: EmbeddedModel, pid: int) -> None:
    """Until the watcher has seen `pid` die (and not yet brought a new one up)."""
    await until(lambda: not model.supervisor.ready, f"the watcher sees pid {pid} die")


def children() -> set[int]:
    """This process's child processes, zombies included (a zombie is a leak too)."""
    mine = set()
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        if stat and int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
            mine.add(int(entry.name))
    return mine


@pytest.fixture
def started() -> Iterator[Callable[..., EmbeddedModel]]:
    """Start models of the test's own; each is stopped after it, and nothing
    it started may outlive it."""
    before = children()
    models: list[EmbeddedModel] = []

    def start(**kw: Any) -> EmbeddedModel:
        model = EmbeddedModel(n_ctx=512, threads=1, **kw)
        models.append(model)
        model.start_blocking()
        return model

    yield start
    for model in models:
        model.stop_blocking()
    assert children() <= before


@pytest.fixture
async def providers() -> AsyncIterator[Callable[..., OpenAIProvider]]:
    built: list[OpenAIProvider] = []

    def provider(model: EmbeddedModel, **kw: Any) -> OpenAIProvider:
        assert model.base_url
        built.append(
            OpenAIProvider("embedded", base_url=model.base_url, api_key=model.api_key, **kw)
        )
        return built[-1]

    yield provider
    for each in built:
        await each.aclose()


async def test_a_killed_child_comes_back_on_its_port_and_a_call_meanwhile_waits(
    started, providers, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.WARNING, "plane.providers.supervise")
    model = started(backoff=Backoff(first_s=1.0))
    url = model.base_url
    # No retries: only waiting for the restart can make its call succeed.
    waiting = providers(model, middlewares=(model.when_ready(),), retry=RetryPolicy(max_retries=0))
    as_built_today = providers(model)

    old = kill(model)
    await noticed(model, old)
    completion = await waiting.complete(ask())

    assert completion.text.strip() and not completion.usage_estimated
    assert completion.usage.output_tokens > 0
    assert model.pid != old and model.base_url == url and model.supervisor.restarts == 1
    [line] = supervisor_lines(caplog, logging.WARNING)
    assert line == f"The embedded model (pid {old}) was killed by SIGKILL; restarting it in 1 s."
    again = await as_built_today.complete(ask("Name a colour."))
    assert again.text.strip() and not again.usage_estimated


class KillOnFirstText:
    """Stands in for the event bus: the child dies as the first words stream."""

    def __init__(self, model: EmbeddedModel) -> None:
        self.model = model
        self.killed: int | None = None

    def emit(self, event: object) -> None:
        if self.killed is None:
            self.killed = kill(self.model)


@pytest.fixture
async def ledger(tmp_path: Path) -> AsyncIterator[Ledger]:
    db = await SqliteDatabase.open(tmp_path / "plane.db")
    yield Ledger(db, ManualClock(NOON))
    await db.close()


def services(provider: OpenAIProvider, ledger: Ledger, emit: Callable[[object], None]) -> Services:
    """What `metered_call` reads of the plane's services, all real but the bus
    (and the gate, asked only for a fleet ceiling there is none of)."""
    pricer = Pricer({"smollm2": Price(input=Decimal(30), output=Decimal(120))})
    no_fleet_ceiling = SimpleNamespace(
        ceilings=SimpleNamespace(fleet=lambda: None, groups=SimpleNamespace(budget=lambda a: None))
    )
    found = SimpleNamespace(
        providers={"embedded": provider},
        pricer=pricer,
        ledger=ledger,
        emit=emit,
        gate=no_fleet_ceiling,  # one plane alone: no fleet or group ceiling to admit against
        ownership=Ownership(),  # and no lease to hold
    )
    return cast(Services, found)


async def test_a_call_cut_by_the_childs_death_is_kept_at_an_estimate_and_the_next_one_works(
    started, providers, ledger: Ledger
):
    """A cut stream is what any provider's broken connection is: the words
    that arrived are kept, the call is settled at an estimate and marked so,
    never as a measured success. The next call, after the restart, is."""
    model = started(backoff=Backoff(first_s=0.1))
    bus = KillOnFirstText(model)
    plane = services(providers(model), ledger, bus.emit)

    cut = await metered_call(plane, "demo", "embedded", STORY, 1)

    assert bus.killed is not None
    assert cut.failure is None and cut.completion.stop_reason == "interrupted"
    assert cut.completion.text and cut.completion.usage_estimated
    await until(lambda: model.supervisor.ready and model.pid != bus.killed, "the restart")
    whole = await metered_call(plane, "demo", "embedded", ask(), 2)
    assert whole.completion.text.strip() and not whole.completion.usage_estimated
    first, second = await ledger.entries(NOON.date())
    assert (first.status, first.estimated) == ("settled", True) and first.cost_usd > 0
    assert (second.status, second.estimated) == ("settled", False)
    assert second.usage == whole.completion.usage


async def test_a_child_that_cannot_start_fails_calls_clearly_and_is_retried_at_a_bounded_pace(
    started, providers, ledger: Ledger, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.INFO, "plane.providers.supervise")
    weights = tmp_path / "model.gguf"
    weights.symlink_to(find_gguf())
    model = started(gguf=weights, backoff=Backoff(first_s=0.1, most_s=0.4))
    waiting = providers(model, middlewares=(model.when_ready(),))
    never_waits = RetryPolicy(max_retries=1, sleep=lambda seconds: asyncio.sleep(0))
    as_built_today = providers(model, retry=never_waits)
    weights.unlink()
    weights.write_bytes(b"not a gguf" * 100)

    killed_at = time.monotonic()
    kill(model)
    await until(lambda: model.supervisor.restarts >= 4, "three failed restarts, a fourth begun")

    with pytest.raises(ProviderError) as refused:
        await waiting.complete(ask())
    said = str(refused.value)
    assert said.startswith("The embedded model did not start: ")
    assert said.endswith(". The plane keeps trying to restart it.") and "\n" not in said
    assert model.api_key not in said
    # As the provider is built today it cannot wait: refused, or a 503 from
    # a child that has the port for a moment; either way one line, no charge.
    plane = services(as_built_today, ledger, lambda event: None)
    with pytest.raises(ProviderError, match=r"^embedded: [^\n]*\(2 attempts\)\.$"):
        await metered_call(plane, "demo", "embedded", ask(), 1)
    [entry] = await ledger.entries(NOON.date())
    assert (entry.status, entry.cost_usd) == ("failed", Decimal(0))

    # The pace: waits double up to the cap, so attempts grow with time, not
    # with CPU; a hot loop would make hundreds in the time this took.
    attempts = model.supervisor.restarts
    elapsed = time.monotonic() - killed_at
    assert attempts <= 4 + elapsed / 0.4
    waits = [
        line.rsplit("Trying again in ", 1)[1] for line in supervisor_lines(caplog, logging.ERROR)
    ]
    assert waits[:3] == ["0.2 s.", "0.4 s.", "0.4 s."]

    weights.unlink()
    weights.symlink_to(find_gguf())
    await until(lambda: model.supervisor.ready, "the model comes back once it can")
    completion = await waiting.complete(ask())
    assert completion.text.strip() and model.supervisor.down_because is None


def watchers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "embedded-model-watcher"}


async def test_stopping_ends_the_child_and_restarts_nothing(started):
    before = watchers()
    model = started()
    pid = model.pid
    model.stop_blocking()
    assert not Path(f"/proc/{pid}").exists() and model.pid is None and not model.running
    assert watchers() == before


@pytest.mark.parametrize("first_s", [30.0, 0.0], ids=["while-waiting", "while-starting"])
async def test_stopping_in_the_middle_of_a_restart_leaves_no_child(started, first_s: float):
    """Stopped while the watcher waits out its backoff, or while the new
    child loads: the watcher stands down and no child is left, alive or not."""
    before, threads = children(), watchers()
    model = started(backoff=Backoff(first_s=first_s))
    old = kill(model)
    await noticed(model, old)
    if first_s == 0:
        await until(lambda: model.pid != old, "the new child is spawned")
    await asyncio.to_thread(model.stop_blocking)
    assert children() <= before and watchers() == threads
    assert model.supervisor.restarts <= 1 and model.pid is None
