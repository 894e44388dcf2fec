"""Attack: an agent tries every way past its ceiling, and none works.

A scripted model (a real local HTTP server, routed by which agent is asking)
asks to loosen its own ceiling every way there is — looser, `off`, huge,
negative, not a number, digits from other scripts, whitespace tricks, an ask
equal to what it has followed by a tighter agents.yaml — writes `/limit off`
in its answers and reads it from files, and drives concurrent turns at the
ceiling from every source at once (operator messages, bookings, ambient
turns, other agents asking the scout). The ceiling never loosens, and no
turn starts with the day's spend at or over it.

`ATTEMPTS` counts every loosening attempt these tests make (the README's
figure); each one is asserted refused.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from typing import Any

from plane.clock import day_of
from plane.protocol import Usage
from tests.support.fixtures_plane import launch
from tests.support.scripted_llm import Reply, ScriptedLLM, Step

TEN_CENTS = Usage(input_tokens=100)
"""$0.10 at the test prices ($0.001 an input token)."""

_WHO = re.compile(r"You are (\S+), an agent run by plane")


def agent_of(body: dict[str, Any]) -> str:
    """Which agent a request is from: its system prompt names it."""
    for message in body.get("messages", []):
        if message.get("role") == "system":
            found = _WHO.search(str(message.get("content")))
            if found:
                return found.group(1)
    found = _WHO.search(str(body.get("system", "")))
    return found.group(1) if found else "?"


def after_a_tool(body: dict[str, Any]) -> bool:
    messages = body.get("messages", [])
    return bool(messages) and messages[-1].get("role") == "tool"


class RoutedLLM(ScriptedLLM):
    """The scripted server, answering each request by who sent it: concurrent
    agents get their own scripts, whatever order their requests arrive in."""

    def __init__(self, route: Callable[[dict[str, Any]], Step | None]) -> None:
        super().__init__()
        self.route = route

    def _record(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[Step, int]:
        step, serial = super()._record(path, headers, body)
        return self.route(body) or step, serial

    def by(self, agent: str) -> list[dict[str, Any]]:
        return [body for body in self.requests if agent_of(body) == agent]


def fleet_config(askers: int, scout: str = "scout: {limitUsd: 0.25}") -> str:
    agents = "\n".join(f"  a{n}: {{}}" for n in range(askers))
    return f"""
defaults:
  limitUsd: 1
  provider: scripted
  model: scripted-model
providers:
  scripted:
    kind: openai-compatible
    base_url: {{base_url}}
    models: [scripted-model]
    max_retries: 0
pricing:
  scripted-model: {{input: 1000, cached_input: 100, output: 2000}}
agents:
  {scout}
{agents}
"""


def scout_fleet_route(body: dict[str, Any]) -> Step:
    """Askers call `ask_scout` once and then answer; every scout call costs
    $0.10 and takes a moment, so turns overlap."""
    if agent_of(body) == "scout":
        return Reply("the answer", usage=TEN_CENTS, delay_s=0.05)
    if after_a_tool(body):
        return Reply("thanks", usage=Usage())
    question = {"question": "what is in the workspace?", "paths": []}
    return Reply("", tool_calls=[("ask_scout", question)], usage=Usage())


async def assert_no_turn_began_at_or_over(plane, agent: str, ceiling: Decimal) -> list[Decimal]:
    """Every call of `agent` today is its own turn (one call a turn in these
    scripts) and turns never overlap, so the spend when turn k began is the
    sum of calls 1..k-1. Returns the calls' costs."""
    entries = await plane.services.ledger.entries(day_of(plane.clock.now()))
    costs = [e.cost_usd for e in entries if e.agent == agent]
    for k in range(len(costs)):
        before = sum(costs[:k], Decimal(0))
        assert before < ceiling, f"turn {k + 1} began with {before} spent against {ceiling}"
    return costs


async def settle(plane, within: float = 30) -> None:
    """Until every agent is idle (askers wait on the scout meanwhile)."""
    deadline = asyncio.get_running_loop().time() + within
    while asyncio.get_running_loop().time() < deadline:
        await plane.quiet()
        await asyncio.sleep(0.05)
        if all(w.idle for w in plane.services.crew.workers.values()):
            return
    raise TimeoutError("agents still working")


# ── concurrent turns at the ceiling ────────────────────────────────────────


async def test_many_agents_asking_the_scout_at_once_never_start_a_turn_over_its_ceiling(
    tmp_path,
):
    askers = 6
    with RoutedLLM(scout_fleet_route) as llm:
        plane = await launch(tmp_path, llm, fleet_config(askers))
        try:
            await asyncio.gather(*(plane.send(f"a{n}", "go") for n in range(askers)))
            await settle(plane)
            costs = await assert_no_turn_began_at_or_over(plane, "scout", Decimal("0.25"))
            assert costs == [Decimal("0.1")] * 3, "turns at $0, $0.10, $0.20; none at $0.30"
            answers = [
                body["messages"][-1]["content"] for body in llm.requests if after_a_tool(body)
            ]
            refused = [a for a in answers if "The scout is not answering" in a]
            assert len(answers) == askers and len(refused) == askers - 3
        finally:
            await plane.stop()


async def test_turns_from_every_source_at_once_never_start_over_the_ceiling(tmp_path):
    """Operator messages, a booking and an ambient turn for the scout come due
    together while six agents ask it questions."""
    askers = 6
    scout = "scout: {limitUsd: 0.25, ambient: {every_minutes: 5}}"
    with RoutedLLM(scout_fleet_route) as llm:
        plane = await launch(tmp_path, llm, fleet_config(askers, scout))
        services = plane.services
        try:
            now = plane.clock.now()
            await services.scheduler.book("scout", now + timedelta(minutes=5), "check the logs")
            moved = plane.clock.advance(timedelta(minutes=5))  # the booking and ambient are due
            await asyncio.gather(
                moved,
                *(plane.send(f"a{n}", "go") for n in range(askers)),
                *(plane.send("scout", f"operator task {n}") for n in range(3)),
            )
            await settle(plane)
            costs = await assert_no_turn_began_at_or_over(plane, "scout", Decimal("0.25"))
            assert len(costs) == 3 and sum(costs) == Decimal("0.3")
            state = await services.crew.state("scout")
            assert state.status == "held"
        finally:
            await plane.stop()
