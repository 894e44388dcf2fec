"""A property of the gate, over random sequences of turns, costs, ceilings
and clock moves: an agent at or over its ceiling starts no turn, so no
agent's spend for a day exceeds the highest ceiling it had that day by more
than one turn."""

import asyncio
import tempfile
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from plane.clock import day_of
from plane.wire.protocol import Usage
from tests.support.fixtures_examples import examples
from tests.support.fixtures_plane import launch
from tests.support.scripted_llm import Reply, ScriptedLLM

AGENTS = ("demo", "scout")
cents = st.integers(min_value=0, max_value=80)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("turn"), st.sampled_from(AGENTS), cents),
        st.tuples(st.just("limit"), st.sampled_from(AGENTS), st.none() | st.integers(0, 100)),
        st.tuples(st.just("clock"), st.just(""), st.integers(1, 26 * 60)),
    ),
    min_size=1,
    max_size=20,
)
AT_THE_CEILING = [("turn", "demo", 80), ("turn", "demo", 80), ("turn", "demo", 10)]
OVERNIGHT = [*AT_THE_CEILING, ("clock", "", 13 * 60), ("turn", "demo", 5)]


def usage_costing(cents_: int) -> Usage:
    return Usage(input_tokens=cents_ * 10)  # $0.001 a token at the test prices


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(ops)
@example(AT_THE_CEILING)
@example(OVERNIGHT)
@example([("limit", "scout", 20), ("turn", "scout", 30), ("turn", "scout", 30)])
@pytest.mark.slow
def test_no_day_exceeds_its_ceiling_by_more_than_one_turn(sequence):
    with ScriptedLLM() as llm, tempfile.TemporaryDirectory() as root:
        asyncio.run(_run(sequence, llm, Path(root)))


async def _run(sequence, llm, root):
    plane = await launch(root, llm)
    services = plane.services
    highest: dict[tuple, Decimal | None] = {}
    turn_cost = Decimal(0)

    def note_ceilings():
        day = day_of(plane.clock.now())
        for agent in AGENTS:
            ceiling, key = services.gate.ceilings.of(agent), (day, agent)
            before = highest.get(key, ceiling)
            highest[key] = None if ceiling is None or before is None else max(ceiling, before)

    try:
        note_ceilings()
        for op, agent, value in sequence:
            if op == "turn":
                before = await services.ledger.spend_today(agent)
                ceiling = services.gate.ceilings.of(agent)
                calls = len(llm.requests)
                llm.default_reply = Reply("ok", usage=usage_costing(value))
                turn_cost = max(turn_cost, Decimal(value) / 100)
                await plane.send(agent, "go")
                await plane.quiet()
                if ceiling is not None and before >= ceiling:
                    assert len(llm.requests) == calls, "a held agent started a turn"
            elif op == "limit":
                await plane.send(agent, "/limit off" if value is None else f"/limit {value / 100}")
                await plane.quiet()
            else:
                await plane.clock.advance(timedelta(minutes=value))
                await plane.quiet()
            note_ceilings()
        for (day, agent), ceiling in highest.items():
            spent = (await services.ledger.spend_by_agent(day)).get(agent, Decimal(0))
            if ceiling is not None:
                assert spent <= ceiling + turn_cost, (day, agent, spent, ceiling)
    finally:
        await plane.stop()
