"""A long reply leaves the plane in one write: a fleet's snapshot (~100
bytes an agent) is handed to the kernel whole, not a default socket
buffer's worth (~200 KiB) at a time, each part waiting for the loop's next
look at its sockets, a few times a second while a thousand agents are busy."""

from __future__ import annotations

import array
import asyncio
import fcntl
import socket
import termios
from pathlib import Path

import pytest

from plane.wire import protocol as p
from tests.support.fixtures_plane import CONFIG

AGENTS = 8000
"""~0.8 MiB of snapshot: four times what a default send buffer takes."""

WMEM_MAX = Path("/proc/sys/net/core/wmem_max")


def kernel_room() -> int:
    """The most send buffer the kernel gives a socket that asks."""
    try:
        return int(WMEM_MAX.read_text())
    except (OSError, ValueError):
        return 0


pytestmark = [
    pytest.mark.slow,  # a plane of 8,000 agents: a few seconds to start
    pytest.mark.skipif(
        kernel_room() < 2 << 20,
        reason="the kernel gives a socket less than 2 MiB of send buffer (net.core.wmem_max)",
    ),
]


def waiting(sock: socket.socket) -> int:
    """Bytes the kernel holds for this socket, sent and not yet read."""
    held = array.array("i", [0])
    fcntl.ioctl(sock.fileno(), termios.FIONREAD, held)
    return held[0]


async def line(sock: socket.socket) -> bytes:
    loop = asyncio.get_running_loop()
    read = b""
    while not read.endswith(b"\n"):
        read += await loop.sock_recv(sock, 1)
    return read


def head_parts(reply: bytes) -> int:
    """How many parts follow the head that begins `reply` (read whole)."""
    head = p.decode_server_frame(reply.split(b"\n", 1)[0])
    assert isinstance(head, p.SnapshotReply) and head.parts > 1, "a reply in parts"
    return head.parts


async def test_a_fleets_snapshot_is_in_the_clients_socket_before_it_reads_any(start_plane):
    fleet = "".join(f"  agent-{n:05d}: {{}}\n" for n in range(AGENTS))
    plane = await start_plane(CONFIG + fleet)
    loop = asyncio.get_running_loop()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.setblocking(False)
        await loop.sock_connect(sock, str(plane.home.socket))
        await loop.sock_sendall(sock, plane.hello())
        assert p.decode_server_frame(await line(sock)).type == "welcome"
        await loop.sock_sendall(sock, p.encode(p.Status(id=2)))
        held, still = 0, 0
        for _ in range(500):  # until the plane has written what it will (nothing is read)
            await asyncio.sleep(0.02)
            now = waiting(sock)
            still = still + 1 if now == held and now else 0
            held = now
            if still == 5:
                break
        reply = b""
        while b"\n" not in reply or reply.count(b"\n") < 1 + head_parts(reply):
            reply += await loop.sock_recv(sock, 1 << 20)
    size = len(reply)
    assert size >= 4 * 200 * 1024, "the test asks for a reply a default buffer cannot hold"
    assert held == size, f"{held} of the reply's {size} bytes were handed over before it was read"
