"""Closing a connection to the plane never swallows the closer's own stop."""

from __future__ import annotations

import asyncio
import socket

import pytest

from plane.wire.client import PlaneClient


async def test_a_closer_stopped_while_it_closes_is_stopped_and_the_connection_closed() -> None:
    ours, theirs = socket.socketpair()
    try:
        reader, writer = await asyncio.open_unix_connection(sock=ours)
        client = PlaneClient(reader, writer)
        closer = asyncio.create_task(client.close())
        await asyncio.sleep(0)  # the closer has cancelled the reading and waits for it
        closer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closer
        assert writer.is_closing()
        assert not client.open
    finally:
        theirs.close()
