"""A conversation not read yet is told from an empty one: until the plane's
first history reply arrives, the pane says it is fetching it (on a plane of
200 agents that reply took seconds, and "Nothing here yet" meanwhile read as
if the agent's messages were gone)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.tui.test_live import SIZE, pane_lines, until
from tui.app import PlaneApp
from tui.link import Address, Backoff
from tui.widgets.conversation import ConversationPane

FETCHING = "Fetching demo's conversation from the plane…"
EMPTY = "Nothing here yet. Type to talk to demo, or /help."


@asynccontextmanager
async def history_held(plane_socket: Path, at: Path, release: asyncio.Event) -> AsyncIterator[None]:
    """A socket at `at` that relays to the plane, holding each history request
    until `release` is set: the plane's slow reply, made at the socket. The
    plane's token is put beside it, where a client looks for it."""
    at.parent.mkdir(exist_ok=True)
    (at.parent / "token").write_bytes((plane_socket.parent / "token").read_bytes())

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, hold: bool) -> None:
        while line := await reader.readline():
            if hold and json.loads(line).get("type") == "history":
                await release.wait()
            writer.write(line)
            await writer.drain()
        writer.close()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_unix_connection(plane_socket)
        await asyncio.gather(
            pipe(reader, upstream_writer, hold=True),
            pipe(upstream_reader, writer, hold=False),
            return_exceptions=True,
        )

    server = await asyncio.start_unix_server(relay, at, limit=2**24)
    async with server:
        yield


def pane_text(app: PlaneApp) -> str:
    return " ".join(app.screen.query_one(ConversationPane).plain().split())


@asynccontextmanager
async def fetching(plane, tmp_path: Path) -> AsyncIterator[tuple[PlaneApp, Any, asyncio.Event]]:
    """The app on `plane` through a socket that holds its history requests,
    once demo is selected and its pane says it is fetching: the app, its
    pilot, and the event that lets the history through."""
    release = asyncio.Event()
    relayed = tmp_path / "relayed" / "plane.sock"
    async with history_held(plane.home.socket, relayed, release):
        app = PlaneApp(Address(path=relayed), backoff=Backoff(first=0.05, most=0.3))
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.main_screen.selected == "demo")
            await until(pilot, lambda: FETCHING in pane_text(app))
            yield app, pilot, release


async def test_a_conversation_not_fetched_yet_says_so_then_shows_its_messages(
    start_plane, tmp_path: Path
) -> None:
    plane = await start_plane()
    await plane.services.conversation.append("demo", "operator", "are you there?")
    async with fetching(plane, tmp_path) as (app, pilot, release):
        assert EMPTY not in pane_text(app)
        release.set()
        await until(pilot, lambda: pane_lines(app) == [("operator", "are you there?")])
        assert FETCHING not in pane_text(app)


async def test_an_empty_conversation_says_fetching_then_nothing_here_yet(
    start_plane, tmp_path: Path
) -> None:
    async with fetching(await start_plane(), tmp_path) as (app, pilot, release):
        release.set()
        await until(pilot, lambda: EMPTY in pane_text(app))
        assert FETCHING not in pane_text(app)
