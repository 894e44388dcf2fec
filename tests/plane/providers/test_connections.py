"""The providers' connection pool (plane.providers.connections): calls in
flight are not capped, idle connections are reused, a connection the server
closed is not, and what a call costs does not grow with the connections held."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from aiohttp.client_proto import ResponseHandler

from plane.errors import ProviderError
from plane.providers.base import Provider
from plane.wire.protocol import Usage
from tests.plane.providers.support import ask
from tests.support.scripted_llm import Reply, ScriptedLLM

AT_ONCE = 50
"""More than aiohttp's habit of reusing a few, and than httpx's default cap of 20 idle."""


def all_at_once(llm: ScriptedLLM) -> None:
    """Each answer waits until `AT_ONCE` calls have arrived (10 s at most)."""
    arrived = threading.Barrier(AT_ONCE, timeout=10)

    def answer(body: dict[str, Any], serial: int) -> Reply:
        arrived.wait()
        return Reply("ok")

    llm.responder = answer


async def test_calls_in_flight_are_not_capped_and_their_connections_are_reused(
    provider: Provider, scripted_llm: ScriptedLLM
):
    # No answer leaves the server until all of a round have arrived: a cap
    # would hold the rest back, and the round would fail.
    all_at_once(scripted_llm)
    for _ in range(2):
        answers = await asyncio.gather(*(provider.complete(ask()) for _ in range(AT_ONCE)))
        assert all(a.text for a in answers)
    assert scripted_llm.connections_accepted == AT_ONCE


async def test_a_connection_the_server_closed_is_not_used_again(
    provider: Provider, scripted_llm: ScriptedLLM
):
    scripted_llm.reply("one").reply("two")
    assert (await provider.complete(ask())).text == "one"
    scripted_llm.drop_connections()
    await asyncio.sleep(0.05)  # the close reaches the plane's side
    assert (await provider.complete(ask())).text == "two"
    assert scripted_llm.connections_accepted == 2


async def test_a_stream_cut_off_loses_its_connection_and_the_next_call_works(
    provider: Provider, scripted_llm: ScriptedLLM
):
    scripted_llm.cut_stream("half an ans", reset=True)
    scripted_llm.reply("whole", usage=Usage(input_tokens=5, output_tokens=1))
    try:
        await provider.complete(ask())
    except ProviderError:
        pass  # what a cut costs is the provider tests' concern
    assert (await provider.complete(ask())).text == "whole"


async def test_a_call_looks_at_few_connections_however_many_are_held(
    provider: Provider, scripted_llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch
):
    """A pool that asks every connection it holds whether it is still good
    (httpcore's asked each socket, on every call's start and end) costs more,
    with a connection per agent, than the rest of the call."""
    all_at_once(scripted_llm)
    await asyncio.gather(*(provider.complete(ask()) for _ in range(AT_ONCE)))
    scripted_llm.responder = None
    looked = 0
    is_connected = ResponseHandler.is_connected

    def counted(connection: ResponseHandler) -> bool:
        nonlocal looked
        looked += 1
        return is_connected(connection)

    monkeypatch.setattr(ResponseHandler, "is_connected", counted)
    await provider.complete(ask())
    assert looked <= 1
