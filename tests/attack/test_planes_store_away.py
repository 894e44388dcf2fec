"""Sends and other requests to a plane of a fleet while its store is away, on a real
PostgreSQL behind a proxy that cuts the plane's link (every connection
reset, new ones refused): a slash command and a message to a gateway agent
are sends like any other, refused with the sentence DESIGN.md gives
("the store is unreachable since …: the message was not kept"), whether
the plane learns that the store is away from that very send or knew it
already, and nothing of them is kept."""

from __future__ import annotations

import asyncio
import logging
import re
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from plane.wire import protocol as p
from plane.wire.client import RequestFailed
from plane.wire.protocol import Usage
from tests.support.approving import held_links, held_plane, post
from tests.support.fixtures_plane import launch, scripted_config
from tests.support.local_http import local_client
from tests.support.tcp_proxy import TcpProxy, through

CONFIG = scripted_config("  demo: {}\n  gw: {gateway: {}}\n", more="fleet:\n  limitUsd: 10\n")

REFUSED = re.compile(
    r"The store is unreachable since \d\d:\d\d:\d\d UTC: the message was not kept; "
    r"send it again once the store is back\."
)
HELLO = [{"role": "user", "content": "hello"}]
SENDS = [
    ("demo", "/limit 5"),  # the first: the plane learns from it that the store is away
    ("demo", "/limit fleet 20"),
    ("demo", "/help"),
    ("gw", "hello from the keyboard"),
]


async def test_commands_and_a_gateway_agents_message_are_refused_with_the_sentence_and_kept_nowhere(
    tmp_path, scripted_llm, postgres_url, monkeypatch
):
    with TcpProxy(int(urlsplit(postgres_url).port or 5432)) as proxy:
        monkeypatch.setenv("PLANE_STORE", through(postgres_url, proxy.port))
        plane = await launch(tmp_path, scripted_llm, CONFIG)
        try:
            client = await plane.client()
            proxy.cut()
            for agent, text in SENDS:
                with pytest.raises(RequestFailed) as refused:
                    await client.request(p.Send(agent=agent, text=text), within_s=30)
                assert REFUSED.fullmatch(str(refused.value)), (text, str(refused.value))
        finally:
            proxy.resume()
            await plane.stop()
    with psycopg.connect(postgres_url) as conn:
        kept = [text for (text,) in conn.execute("SELECT text FROM messages")]
    assert [text for text in kept if text in {sent for _, sent in SENDS}] == []


ASKED_AWAY = re.compile(
    r"The store is unreachable since \d\d:\d\d:\d\d UTC: ask again once the store is back\."
)
"""A request that reads, while the store is away."""
CHANGED_NOTHING = re.compile(
    r"The store is unreachable since \d\d:\d\d:\d\d UTC: nothing changed; "
    r"ask again once the store is back\."
)
"""A request that would change something, while the store is away."""


async def test_other_requests_while_the_store_is_away_say_so_in_the_planes_words(
    tmp_path, scripted_llm, postgres_url, monkeypatch
):
    """Not the store's own error (its host and port, libpq's words): the
    sentence the plane says of the store being away, and for a change that
    nothing changed — which holds once the store is back."""
    with TcpProxy(int(urlsplit(postgres_url).port or 5432)) as proxy:
        monkeypatch.setenv("PLANE_STORE", through(postgres_url, proxy.port))
        plane = await launch(tmp_path, scripted_llm, CONFIG)
        try:
            client = await plane.client()
            proxy.cut()
            asked: list[tuple[p.Request[Any], re.Pattern[str]]] = [
                (p.History(agent="demo", limit=10), ASKED_AWAY),
                (p.Ledger(), ASKED_AWAY),
                (p.PauseAgent(agent="demo", paused=True), CHANGED_NOTHING),
                (p.EditAgent(agent="demo", role="a new role"), CHANGED_NOTHING),
            ]
            for request, sentence in asked:
                with pytest.raises(RequestFailed) as refused:
                    await client.request(request, within_s=30)
                assert sentence.fullmatch(str(refused.value)), (request.type, str(refused.value))
            status = await client.request(p.Status(), within_s=30)
        finally:
            proxy.resume()
            await plane.stop()
    (demo,) = [row for row in status.snapshot.agents if row.name == "demo"]
    assert (demo.paused, demo.role) == (False, "")


async def test_an_approval_link_followed_while_the_store_is_away_says_so_and_raises_nothing(
    start_plane, receiver, postgres_url, monkeypatch
):
    """The operator's tap on an alert's button, from a phone: not a bare
    `500 Internal Server Error`, the same sentence as any other request."""
    with TcpProxy(int(urlsplit(postgres_url).port or 5432)) as proxy:
        monkeypatch.setenv("PLANE_STORE", through(postgres_url, proxy.port))
        plane = await held_plane(start_plane, receiver)
        link = held_links(receiver)["+$0.40 today"]
        proxy.cut()
        try:
            async with local_client() as client:
                shown = await client.get(link)
            tapped = await post(link)
            ceiling = plane.runtime.services.gate.ceilings.of("demo")
        finally:
            proxy.resume()
    assert (shown.status_code, tapped.status_code) == (503, 503)
    assert ASKED_AWAY.fullmatch(shown.text.strip()), shown.text
    assert CHANGED_NOTHING.fullmatch(tapped.text.strip()), tapped.text
    assert ceiling == Decimal(1)


async def test_a_gateway_call_while_the_store_is_away_says_so_in_the_planes_words(
    start_gateway, postgres_url, monkeypatch
):
    """A client's call, refused before it is sent (it could not be written
    pending): the plane's sentence, not libpq's words with the store's host
    and port, and nothing reaches the provider."""
    with TcpProxy(int(urlsplit(postgres_url).port or 5432)) as proxy:
        monkeypatch.setenv("PLANE_STORE", through(postgres_url, proxy.port))
        gw = await start_gateway()
        proxy.cut()
        try:
            async with local_client() as client:
                answer = await client.post(
                    f"{gw.url}/v1/messages",
                    json={"model": "scripted-model", "max_tokens": 10, "messages": HELLO},
                    headers={"x-api-key": gw.keys["claude"]},
                    timeout=30,
                )
        finally:
            proxy.resume()
    assert answer.status_code == 503
    assert ASKED_AWAY.fullmatch(answer.json()["error"]["message"]), answer.text
    assert gw.llm.requests == []


async def test_a_worker_the_store_goes_away_under_says_no_turn_failed_inside_the_plane(
    tmp_path, scripted_llm, postgres_url, monkeypatch, caplog
):
    """An agent looked at while the store is away (its waiting messages not
    readable): a warning in the log, and no "The turn failed inside the
    plane" told, then or once the store is back; that notice is for a fault
    of the plane's own."""
    with TcpProxy(int(urlsplit(postgres_url).port or 5432)) as proxy:
        monkeypatch.setenv("PLANE_STORE", through(postgres_url, proxy.port))
        plane = await launch(tmp_path, scripted_llm, scripted_config("  demo: {}\n"))
        try:
            scripted_llm.reply("Hello.", usage=Usage(input_tokens=10))
            await plane.turn("demo", "hi")  # the day reached, its sums in memory
            proxy.cut()
            with caplog.at_level(logging.WARNING, logger="plane.agents.worker"):
                plane.crew.workers["demo"].wake()
                await asyncio.wait_for(worker_said(caplog, "demo: "), 30)
            proxy.resume()
            await plane.quiet()  # the store back: the plane has acted on all of it
        finally:
            proxy.resume()
            await plane.stop()
    logged = [
        (r.levelno, r.getMessage()) for r in caplog.records if r.name == "plane.agents.worker"
    ]
    assert (logging.ERROR, "worker for demo") not in logged
    assert warned(caplog, "demo: "), "the log says why the agent stopped"
    with psycopg.connect(postgres_url) as conn:
        told = [text for (text,) in conn.execute("SELECT text FROM messages WHERE agent = 'demo'")]
    assert not [t for t in told if t.startswith("The turn failed inside the plane")], told


async def worker_said(caplog: pytest.LogCaptureFixture, starts: str) -> None:
    """Until the workers' log has a warning starting with `starts`."""
    while not warned(caplog, starts):  # noqa: ASYNC110 - a log line, not an event
        await asyncio.sleep(0.02)


def warned(caplog: pytest.LogCaptureFixture, starts: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "plane.agents.worker"
        and r.levelno == logging.WARNING
        and r.getMessage().startswith(starts)
    ]
