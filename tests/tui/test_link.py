"""The TUI's link against a real socket server that speaks for a newer plane:
an event of a type this client does not know is logged and skipped, and the
connection goes on, events after it included."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from plane.wire import protocol as p
from plane.wire.client import PlaneClient
from tests.tui.factories import agent, snapshot
from tui.link import Address, Backoff, Link, Timeouts
from tui.messages import PlaneConnected, PlaneEvent, PlaneLost

NEWER = b'{"type":"weather_changed","agent":"demo","forecast":"rain"}\n'


async def newer_plane(socket: Path) -> asyncio.Server:
    """Welcomes, answers subscribe and status, and after the snapshot sends a
    known event, one it made up, and a known one again."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            request = json.loads(line)
            ident = request["id"]
            if request["type"] == "hello":
                writer.write(p.encode(p.HelloReply(id=ident, plane_version="newer")))
            elif request["type"] == "subscribe":
                writer.write(p.encode(p.SnapshotReply(id=ident, snapshot=snapshot(agent("demo")))))
                writer.write(p.encode(p.AgentUpdated(agent=agent("demo", status="working"))))
                writer.write(NEWER)
                writer.write(p.encode(p.AgentUpdated(agent=agent("demo", status="idle"))))
            else:
                writer.write(p.encode(p.SnapshotReply(id=ident, snapshot=snapshot(agent("demo")))))
            await writer.drain()
        writer.close()

    return await asyncio.start_unix_server(serve, socket)


async def test_an_unknown_event_is_skipped_and_the_link_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    socket = tmp_path / "plane.sock"
    posted: list[object] = []
    second_event = asyncio.Event()

    def post(message: object) -> None:
        posted.append(message)
        if len([m for m in posted if isinstance(m, PlaneEvent)]) == 2:
            second_event.set()

    link = Link(Address(path=socket, token="t"), post, backoff=Backoff(0.01, 0.01))
    async with await newer_plane(socket):
        with caplog.at_level(logging.WARNING):
            running = asyncio.create_task(link.run())
            await asyncio.wait_for(second_event.wait(), 5)
            await asyncio.sleep(0.1)  # room for a drop, had the frame ended the connection
            running.cancel()
    assert isinstance(posted[0], PlaneConnected)
    events = [m.event for m in posted if isinstance(m, PlaneEvent)]
    assert all(isinstance(e, p.AgentUpdated) for e in events)
    assert [e.agent.status for e in events if isinstance(e, p.AgentUpdated)] == ["working", "idle"]
    assert not [m for m in posted if isinstance(m, PlaneLost)], "the connection never dropped"
    assert "weather_changed" in caplog.text


async def test_the_socket_client_skips_it_too_and_still_answers(tmp_path: Path) -> None:
    socket = tmp_path / "plane.sock"
    async with await newer_plane(socket):
        client = await PlaneClient.connect(socket, token="t")
        await client.request(p.Subscribe())
        events = client.events()
        first, second = await anext(events), await anext(events)
        assert isinstance(first, p.AgentUpdated) and isinstance(second, p.AgentUpdated)
        assert (first.agent.status, second.agent.status) == ("working", "idle")
        assert isinstance(await client.request(p.Status(), within_s=5), p.SnapshotReply)
        await client.close()


async def test_a_request_given_up_on_as_its_reply_arrives_leaves_the_connection_up(
    tmp_path: Path,
) -> None:
    """The TUI gives up on a request when a newer one replaces it (a second
    conversation fetch cancels the first). Cancelled in the moment between its
    reply arriving and the reader taking it, the reply once found a cancelled
    future, and the reader died with the connection: every later request was
    "Not sent (no connection to the plane)". Each step of the loop below moves
    the cancel one turn of the event loop later, across that moment."""
    socket = tmp_path / "plane.sock"
    async with await newer_plane(socket):
        client = await PlaneClient.connect(socket, token="t")
        for turns in range(12):
            for _ in range(4):
                asked = asyncio.create_task(client.request(p.Status(), within_s=5))
                for _ in range(turns):
                    await asyncio.sleep(0)
                asked.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await asked
        assert client.ended is None
        assert isinstance(await client.request(p.Status(), within_s=5), p.SnapshotReply)
        await client.close()


async def dropping_plane(socket: Path) -> asyncio.Server:
    """Its first connection ends right after the snapshot; the next ones stay
    and take messages."""
    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        first = connections == 1
        while line := await reader.readline():
            request = json.loads(line)
            ident = request["id"]
            if request["type"] == "hello":
                writer.write(p.encode(p.HelloReply(id=ident, plane_version="test")))
            elif request["type"] == "subscribe":
                writer.write(p.encode(p.SnapshotReply(id=ident, snapshot=snapshot(agent("demo")))))
                if first:
                    await writer.drain()
                    break
            elif request["type"] == "send":
                writer.write(p.encode(p.SendReply(id=ident, messages=[])))
            await writer.drain()
        writer.close()

    return await asyncio.start_unix_server(serve, socket)


async def test_a_message_typed_while_the_link_reconnects_waits_for_it_and_goes(
    tmp_path: Path,
) -> None:
    socket = tmp_path / "plane.sock"
    posted: list[object] = []
    lost = asyncio.Event()

    def post(message: object) -> None:
        posted.append(message)
        if isinstance(message, PlaneLost):
            lost.set()

    link = Link(Address(path=socket, token="t"), post, backoff=Backoff(0.3, 0.3))
    async with await dropping_plane(socket):
        running = asyncio.create_task(link.run())
        await asyncio.wait_for(lost.wait(), 5)
        assert not link.connected
        sent = await link.request(p.Send(agent="demo", text="still there?"))
        running.cancel()
    assert sent.messages == []
    assert [type(m) for m in posted] == [PlaneConnected, PlaneLost, PlaneConnected]


def test_each_request_waits_as_long_as_its_kind_may_take() -> None:
    """A new agent may start the embedded model, an edit may put it on it, a
    delete cuts a turn first: those wait the long time; the rest the short."""
    timeouts = Timeouts(request_s=1.0, new_agent_s=2.0)
    slow: list[p.Request[Any]] = [
        p.NewAgent(name="poet", model="m"),
        p.EditAgent(agent="demo", model="m"),
        p.DeleteAgent(agent="demo"),
    ]
    quick: list[p.Request[Any]] = [
        p.Send(agent="demo", text="hi"),
        p.History(agent="demo"),
        p.PauseAgent(agent="demo"),
        p.RenameAgent(agent="demo", new_name="poet"),
        p.Interrupt(agent="demo"),
        p.SpendHistory(),
        p.SpendStack(),
    ]
    assert [timeouts.of(r) for r in slow] == [2.0] * 3
    assert [timeouts.of(r) for r in quick] == [1.0] * 7
