"""What a new agent may be put on, on a real plane over its socket: a provider
kept in agents.yaml without its key offers nothing and makes no agent; an
agent made on a keyed provider stops the plane, by name, once the key is gone;
the embedded model, offered though no agent used it at start-up, starts for
the first agent put on it."""

import asyncio

import pytest

from plane.config import EMBEDDED_MODEL
from plane.errors import ConfigError
from plane.wire import protocol as p
from plane.wire.client import RequestFailed
from tests.support.fixtures_plane import CONFIG

KEY = "PLANE_TEST_KEYED_KEY"
KEYED = CONFIG.replace(
    "    max_retries: 0\n",
    "    max_retries: 0\n"
    "  keyed:\n"
    "    kind: openai-compatible\n"
    "    base_url: {base_url}\n"
    f"    api_key_env: {KEY}\n"
    "    models: [keyed-model]\n",
    1,
)
"""The test config with a second provider whose key is in `KEY`, used by no agent."""


async def status(plane) -> p.Snapshot:
    client = await plane.client()
    reply = await client.request(p.Status())
    assert isinstance(reply, p.SnapshotReply)
    return reply.snapshot


async def names(plane) -> list[str]:
    return [a.name for a in (await status(plane)).agents]


async def test_a_provider_kept_without_its_key_offers_nothing_and_makes_no_agent(
    start_plane, monkeypatch
):
    monkeypatch.delenv(KEY, raising=False)
    plane = await start_plane(KEYED)
    assert (await status(plane)).models == ["scripted-model", "other-model", EMBEDDED_MODEL]

    client = await plane.client()
    with pytest.raises(RequestFailed) as caught:
        await client.request(p.NewAgent(name="poet", model="keyed-model"))
    assert caught.value.error.code == "invalid"
    assert caught.value.error.message == (
        "'keyed-model' is not offered: its provider 'keyed' has no API key; "
        f"set the environment variable {KEY} and restart the plane."
    )
    assert await names(plane) == ["demo", "scout"]
    assert not plane.home.workspace("poet").exists()
    plane = await start_plane(restart=plane)
    assert await names(plane) == ["demo", "scout"], "nothing was stored either"


async def test_an_agent_made_on_a_keyed_provider_stops_the_plane_once_its_key_is_gone(
    start_plane, monkeypatch
):
    monkeypatch.setenv(KEY, "sk-test-value")
    plane = await start_plane(KEYED)
    assert "keyed-model" in (await status(plane)).models
    client = await plane.client()
    reply = await client.request(p.NewAgent(name="poet", model="keyed-model"))
    assert reply.agent.provider == "keyed"

    monkeypatch.delenv(KEY)
    with pytest.raises(ConfigError) as caught:
        await start_plane(restart=plane)
    assert str(caught.value) == (
        "agents.yaml line 15: providers.keyed.api_key_env: provider 'keyed' is used by "
        f"agent 'poet', but its API key is not set: set the environment variable {KEY}."
    )
    assert "sk-test-value" not in str(caught.value)
    assert not plane.home.socket.exists(), "a plane that refused leaves nothing behind"

    monkeypatch.setenv(KEY, "sk-test-value")
    plane = await start_plane(KEYED)  # the home's lock was let go
    assert await names(plane) == ["demo", "scout", "poet"]


async def test_an_agent_whose_provider_block_is_gone_moves_to_one_offering_its_model(
    start_plane, monkeypatch
):
    monkeypatch.setenv(KEY, "sk-test-value")
    plane = await start_plane(KEYED)
    client = await plane.client()
    await client.request(p.NewAgent(name="poet", model="keyed-model"))

    offered_elsewhere = CONFIG.replace(
        "[scripted-model, other-model]", "[scripted-model, keyed-model]"
    )
    plane = await start_plane(offered_elsewhere, restart=plane)
    assert plane.services.roster.get("poet").provider == "scripted"

    with pytest.raises(ConfigError) as caught:
        await start_plane(CONFIG, restart=plane)
    assert str(caught.value) == (
        "Agent 'poet' (made from the keyboard) is on provider 'keyed', which agents.yaml no "
        "longer has, and no provider there offers its model 'keyed-model': add a provider "
        "that lists it."
    )


@pytest.mark.embedded
async def test_the_embedded_model_starts_for_the_first_agent_put_on_it(start_plane):
    short = CONFIG.replace(
        "defaults:\n", "defaults:\n  max_calls_per_turn: 1\n  max_output_tokens: 32\n"
    )
    priced = short.replace("pricing:\n", f"pricing:\n  {EMBEDDED_MODEL}: {{input: 1, output: 1}}\n")
    plane = await start_plane(priced)
    assert "embedded" not in plane.services.providers, "no agent used it at start-up"
    assert EMBEDDED_MODEL in (await status(plane)).models

    client = await plane.client()
    made = await asyncio.gather(
        client.request(p.NewAgent(name="tiny", model=EMBEDDED_MODEL)),
        client.request(p.NewAgent(name="wee", model=EMBEDDED_MODEL)),
    )
    assert [m.agent.provider for m in made] == ["embedded", "embedded"]

    said = await plane.turn("tiny", "Say hello in five words.", within=240)
    assert [m.kind for m in said][-1] == "cost"
    [call] = (await client.request(p.Ledger())).entries  # one call a turn, in this config
    assert (call.agent, call.model, call.status) == ("tiny", EMBEDDED_MODEL, "settled")
    assert call.usage.input_tokens > 10 and call.usage.output_tokens > 0
