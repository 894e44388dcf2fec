"""Step down, not only stop (`fallback:` in agents.yaml), on a real plane
and the scripted LLM server at scripted prices: from its ratio of the
ceiling an agent's calls use the cheaper model, said once in its
conversation and shown in its row; the ceiling still holds; the next day it
is back on its own model. Config refuses a fallback nothing serves."""

from __future__ import annotations

from datetime import timedelta

import pytest

from plane.cli.manage import shown
from plane.clock import ManualClock
from plane.config import parse_config
from plane.daemon.server import Plane
from plane.errors import ConfigError
from plane.home import Home
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from plane.wire.words import notice_kind
from tests.support.fixtures_plane import CONFIG, NOON, RunningPlane

STEPS = CONFIG.replace(
    "  scripted-model: {input: 1000, cached_input: 100, output: 2000}",
    "  scripted-model: {input: 1000, cached_input: 100, output: 2000}\n"
    "  other-model: {input: 100, cached_input: 10, output: 200}",
).replace("  demo: {}", "  demo: {fallback: {at: 0.8, model: other-model}}")
"""demo's ceiling $1.00; from $0.80 it steps down to a model ten times cheaper."""
SWITCHED = (
    "demo switched to other-model at $0.85 of $1.00 today (fallback at 80%); "
    "it goes back at 00:00 UTC."
)


def models_asked(plane: RunningPlane) -> list[str]:
    return [request["model"] for request in plane.llm.requests]


async def spend(plane: RunningPlane, tokens: int, n: int = 0) -> None:
    plane.llm.reply(f"done {n}", usage=Usage(input_tokens=tokens))
    await plane.turn("demo", f"work {n}")


async def test_from_its_ratio_it_steps_down_says_so_once_and_shows_it(start_plane):
    plane = await start_plane(STEPS)
    await spend(plane, 700, 1)  # $0.70
    await spend(plane, 150, 2)  # $0.85: the turn began below the ratio
    assert models_asked(plane) == ["scripted-model"] * 2
    row = await plane.rows.state("demo")
    assert (row.model, row.stepped_down_from) == ("other-model", "scripted-model")
    details = await plane.runtime.api.handle(p.ShowAgent(id=1, agent="demo"))
    assert (
        "  model      other-model (scripted) · fallback from scripted-model until 00:00 UTC\n"
    ) in shown(details)

    await spend(plane, 100, 3)  # $0.01 at the cheaper price
    await spend(plane, 100, 4)
    assert models_asked(plane)[2:] == ["other-model"] * 2
    said = [m.text for m in await plane.services.conversation.history("demo", 50)]
    assert said.count(SWITCHED) == 1 and notice_kind(SWITCHED) == "warn"
    assert "$0.01 · 100 in · 0 out" in said, "priced at the cheaper model's price"


async def test_the_ceiling_still_holds_on_the_fallback(start_plane):
    plane = await start_plane(STEPS)
    await spend(plane, 850, 1)  # $0.85
    await spend(plane, 1500, 2)  # $0.15 at the cheaper price: $1.00
    row = await plane.rows.state("demo")
    assert (row.status, row.hold_reason) == ("held", "ceiling")
    calls = len(plane.llm.requests)
    await plane.send("demo", "more?")
    await plane.quiet()
    assert len(plane.llm.requests) == calls


async def test_the_next_day_it_is_back_on_its_own_model(start_plane):
    plane = await start_plane(STEPS)
    await spend(plane, 850, 1)
    await spend(plane, 10, 2)
    assert models_asked(plane)[-1] == "other-model"
    await plane.clock.advance(timedelta(hours=12))  # past 00:00 UTC
    await plane.quiet()
    row = await plane.rows.state("demo")
    assert (row.model, row.stepped_down_from) == ("scripted-model", None)
    await spend(plane, 10, 3)
    assert models_asked(plane)[-1] == "scripted-model"
    await spend(plane, 900, 4)
    await spend(plane, 10, 5)
    said = [m.text for m in await plane.services.conversation.history("demo", 80)]
    assert sum(text.startswith("demo switched to other-model") for text in said) == 2


def test_a_fallback_nothing_serves_is_refused_at_load():
    bad = STEPS.replace("model: other-model}", "model: nobody-serves-this}")
    with pytest.raises(ConfigError, match="'nobody-serves-this' is not a model of any provider"):
        parse_config(bad.replace("{base_url}", "http://127.0.0.1:9"))


def test_a_gateway_agent_steps_down_only_when_its_own_block_says_so():
    text = STEPS.replace("{base_url}", "http://127.0.0.1:9").replace(
        "defaults:\n", "defaults:\n  fallback: {at: 0.5, model: other-model}\n"
    )
    text += "  gw: {gateway: {}}\n"
    config = parse_config(text)
    assert config.fallback_of("gw") is None
    scout = config.fallback_of("scout")
    assert scout is not None and scout.at == 0.5


async def test_a_fallback_on_a_provider_without_its_key_stops_the_plane(
    tmp_path, scripted_llm, monkeypatch
):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    text = STEPS.replace("{base_url}", scripted_llm.base_url).replace(
        "providers:\n", "providers:\n  anth: {kind: anthropic, models: [claude-haiku-4-5]}\n"
    )
    text = text.replace("model: other-model}", "model: claude-haiku-4-5}")
    plane = Plane(parse_config(text), Home(tmp_path / "home"), ManualClock(NOON))
    with pytest.raises(
        ConfigError,
        match="demo's fallback 'claude-haiku-4-5' runs on provider "
        "'anth', whose API key is not set: set the environment variable "
        "ANTHROPIC_API_KEY",
    ):
        await plane.startup()
    plane.stop_event.set()
    await plane.shutdown()


async def test_a_raised_ceiling_brings_it_back_and_says_so_once_per_switch(start_plane):
    """Stepped down, then `/limit 10`: its next call is on its own model,
    said once (not per call) and its row no longer shows the fallback; a
    new step down the same day is said again."""
    plane = await start_plane(STEPS)
    await spend(plane, 850, 1)  # $0.85
    await spend(plane, 10, 2)
    assert models_asked(plane)[-1] == "other-model"
    client = await plane.client()
    await client.request(p.Send(agent="demo", text="/limit 10"))
    await spend(plane, 10, 3)
    await spend(plane, 10, 4)
    assert models_asked(plane)[-2:] == ["scripted-model"] * 2
    row = await plane.rows.state("demo")
    assert (row.model, row.stepped_down_from) == ("scripted-model", None)
    said = [m.text for m in await plane.services.conversation.history("demo", 80)]
    back = [text for text in said if text.startswith("demo is back on")]
    assert back == [
        "demo is back on scripted-model: $0.85 of $10.00 today is under its fallback's 80%."
    ]
    await spend(plane, 8000, 5)  # $8.85: past 80% of $10.00
    await spend(plane, 10, 6)
    assert models_asked(plane)[-1] == "other-model"
    said = [m.text for m in await plane.services.conversation.history("demo", 80)]
    assert sum(text.startswith("demo switched to other-model") for text in said) == 2
