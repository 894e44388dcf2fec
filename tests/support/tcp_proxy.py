"""A TCP proxy between one plane and PostgreSQL that can stall or cut the link.

    with TcpProxy(server_port) as proxy:      # listens on 127.0.0.1:proxy.port
        ...                                    # point the plane at proxy.port
        proxy.stall()                          # bytes stop flowing, both ways;
                                               # the sockets stay open (a partition
                                               # no keepalive sees: the proxy's own
                                               # kernel answers them)
        proxy.resume()                         # they flow again, held bytes first
        proxy.cut()                            # every connection reset (and new ones
                                               # refused until resume())

Why a proxy and not a firewall rule: rules need privileges and touch the
machine; a proxy in the test's own process cuts one plane's link and no
one else's. It runs its own asyncio loop in a thread, so tests and planes
in other processes use it alike. Thread-safe: `stall`, `resume` and `cut`
may be called from any thread (a write function on the store's thread too).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from urllib.parse import urlsplit, urlunsplit

__all__ = ["TcpProxy", "through"]


class TcpProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self._target = (target_host, target_port)
        self._loop = asyncio.new_event_loop()
        self._flowing = threading.Event()
        self._flowing.set()
        self._refusing = False
        self._links: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="tcp-proxy", daemon=True
        )
        self.port = 0
        self.stalled_bytes = 0
        """Bytes that arrived while stalled (held, then sent on resume)."""

    # lifecycle

    def start(self) -> TcpProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(10)
        return self

    def stop(self) -> None:
        self.resume()
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # faults

    def stall(self) -> None:
        """Stop forwarding, both ways; connections stay open."""
        self._flowing.clear()

    def resume(self) -> None:
        self._refusing = False
        self._flowing.set()
        self._loop.call_soon_threadsafe(self._wake_pumps)

    def cut(self) -> None:
        """Reset every connection through the proxy, and refuse new ones
        until `resume`."""
        self._refusing = True
        asyncio.run_coroutine_threadsafe(self._reset_all(), self._loop).result(10)

    @property
    def connections(self) -> int:
        return len(self._links)

    # the loop's side

    async def _listen(self) -> None:
        self._gate = asyncio.Event()
        self._gate.set()
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def _wake_pumps(self) -> None:
        self._gate.set()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._refusing:
            _reset(writer)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            _reset(writer)
            return
        link = (writer, up_writer)
        self._links.add(link)
        try:
            await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))
        finally:
            self._links.discard(link)
            for each in link:
                each.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await reader.read(65536):
                if not self._flowing.is_set():
                    self.stalled_bytes += len(data)
                while not self._flowing.is_set():  # stalled: hold what came
                    self._gate.clear()
                    if self._flowing.is_set():
                        break
                    await self._gate.wait()
                    if writer.is_closing():  # cut meanwhile
                        return
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(ConnectionError, OSError):
            if writer.can_write_eof():
                writer.write_eof()

    async def _reset_all(self) -> None:
        for down, up in list(self._links):
            _reset(down)
            _reset(up)
        self._gate.set()

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        await self._reset_all()


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (SO_LINGER 0), as a broken link is seen."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.close()


def through(url: str, port: int) -> str:
    """A database's `url`, reached through the proxy listening on `port`."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit(":", 1)[0] + f":{port}"))
