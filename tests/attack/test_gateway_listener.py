"""The gateway's listener, attacked: nobody unknown costs anything.

Keyless clients with big bodies, bodies over the limit, bodies that trickle,
more bodies at once than the plane will hold, connections that never speak,
headers sent a byte at a time, and the same on the `--tcp` socket before its
hello. In-process on a real plane with small bounds (fast), and on a real
`plane serve --http --tcp` in a subprocess with its real bounds (slow: the
figures, printed with `-s`, are the README's).

Clients here are raw sockets: an HTTP client library would wait to send its
whole body before it reads an answer, and what matters is what the plane
does before it has the body.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from plane.daemon.door import Door
from plane.daemon.http import HttpListener, Limits
from plane.daemon.listener import Listener
from plane.gateway.keys import Keys
from plane.home import Home
from plane.wire import protocol as p
from plane.wire.client import PlaneClient
from tests.support.fixtures_gateway import CONFIG, GatewayPlane, StartGateway
from tests.support.local_http import local_client
from tests.support.scripted_llm import ScriptedLLM

MB = 1_000_000
ROUTES: tuple[tuple[str, dict[str, str]], ...] = (
    ("/v1/messages", {"x-api-key": "plane-claude-guessed"}),
    ("/v1/chat/completions", {}),
    ("/v1/responses", {"authorization": "Bearer sk-not-a-key"}),
    ("/v1/messages/count_tokens", {"x-api-key": ""}),
)


def head(path: str, length: int, headers: dict[str, str], method: str = "POST") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: plane", f"Content-Length: {length}"]
    lines += ["Content-Type: application/json", "anthropic-version: 2023-06-01"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def answer_of(reader: asyncio.StreamReader, within: float = 5) -> tuple[int, dict, bytes]:
    """Status, headers and body of one response (read by its Content-Length)."""
    async with asyncio.timeout(within):
        status_line = await reader.readline()
        headers = {}
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", 0)))
    return int(status_line.split()[1]), headers, body


async def closed(reader: asyncio.StreamReader, within: float) -> bool:
    """The plane closed the connection within `within` seconds."""
    try:
        async with asyncio.timeout(within):
            while await reader.read(65536):
                pass
    except TimeoutError:
        return False
    except ConnectionError:
        return True
    return True


async def connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


@contextlib.asynccontextmanager
async def listening(gw: GatewayPlane, limits: Limits) -> AsyncIterator[HttpListener]:
    """A second listener on the gateway plane's own gateway, with `limits`."""
    listener = HttpListener(gw.gateway, 1.0, limits=limits)
    await listener.listen("127.0.0.1", 0)
    try:
        yield listener
    finally:
        await listener.close()


def call(size: int) -> bytes:
    """A Messages request of `size` bytes."""
    shell: dict[str, Any] = {
        "model": "scripted-model",
        "max_tokens": 5,
        "messages": [{"role": "user"}],
    }
    text = json.dumps(shell)
    pad = size - len(text) - len(', "content": ""')
    shell["messages"][0]["content"] = "x" * pad
    body = json.dumps(shell).encode()
    assert len(body) == size
    return body


# ── keyless ─────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(("path", "headers"), ROUTES)
async def test_a_keyless_call_is_refused_from_its_headers_and_its_body_is_never_read(
    start_gateway: StartGateway, path: str, headers: dict[str, str]
) -> None:
    """31 MB announced, none of it sent: the 401 comes at once (the plane
    waited for the whole body before it looked at the key), in the API's own
    shape, and the connection closes instead of taking the body."""
    gw = await start_gateway()
    reader, writer = await connect(gw.plane.http_port or 0)
    writer.write(head(path, 31 * MB, headers))
    status, said, body = await answer_of(reader)
    assert status == 401
    assert said.get("connection") == "close"
    error = json.loads(body)
    if path.startswith("/v1/messages"):
        assert error["error"]["type"] == "authentication_error"
    else:
        assert error["error"]["code"] == "invalid_api_key"
    assert "not a gateway agent's key" in error["error"]["message"]
    sent = 0
    with contextlib.suppress(ConnectionError):
        while sent < 31 * MB:  # the plane reads none of it: the socket fills, or is reset
            writer.write(b"x" * MB)
            await asyncio.wait_for(writer.drain(), 2)
            sent += MB
    assert sent < 31 * MB
    assert await closed(reader, 2)
    writer.close()


async def test_a_body_over_the_limit_is_refused_before_it_is_read(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    reader, writer = await connect(gw.plane.http_port or 0)
    writer.write(head("/v1/messages", 33 << 20, {"x-api-key": gw.keys["claude"]}))
    status, _, body = await answer_of(reader)
    assert status == 413
    assert json.loads(body)["error"]["message"] == (
        "The request body is over the plane's 32 MiB limit."
    )
    assert await closed(reader, 2)


async def test_bodies_held_at_once_are_bounded_and_a_call_past_that_waits_its_turn(
    start_gateway: StartGateway,
) -> None:
    """Two bodies of 1.5 MiB fill a 3 MiB room: a third gets 503 with a short
    Retry-After at once, before its body is read; once one leaves, room is made."""
    gw = await start_gateway()
    size = 3 << 19
    limits = Limits(bodies_bytes=3 << 20, body_s=30)
    async with listening(gw, limits) as listener:
        key = {"x-api-key": gw.keys["claude"]}
        holding = []
        for _ in range(2):
            reader, writer = await connect(listener.port or 0)
            writer.write(head("/v1/messages", size, key) + b"{")
            holding.append((reader, writer))
        await asyncio.sleep(0.2)
        assert listener.bodies.held == 2 * size
        reader, writer = await connect(listener.port or 0)
        writer.write(head("/v1/messages", size, key))
        status, said, body = await answer_of(reader)
        assert (status, said["retry-after"]) == (503, "2")
        assert (
            "holding 3 MiB of other calls' request bodies" in json.loads(body)["error"]["message"]
        )
        assert await closed(reader, 2)

        holding[0][1].close()  # one leaves mid-body: its room is given back
        await asyncio.sleep(0.2)
        assert listener.bodies.held == size
        reader, writer = await connect(listener.port or 0)
        writer.write(head("/v1/messages", size, key) + call(size))
        status, _, body = await answer_of(reader)
        assert status != 503, body  # read and sent on (the agent's ceiling decides the rest)
        holding[1][1].close()
        await asyncio.sleep(0.2)
        assert listener.bodies.held == 0


async def test_a_body_that_trickles_is_cut_at_its_deadline(start_gateway: StartGateway) -> None:
    gw = await start_gateway()
    async with listening(gw, Limits(body_s=0.5)) as listener:
        reader, writer = await connect(listener.port or 0)
        writer.write(head("/v1/messages", 1000, {"x-api-key": gw.keys["claude"]}) + b'{"m')
        began = time.monotonic()
        status, _, body = await answer_of(reader)
        assert status == 408
        assert 0.4 < time.monotonic() - began < 3
        assert json.loads(body)["error"]["message"] == (
            "The request body did not arrive whole within 0.5 s."
        )
        assert await closed(reader, 2)
        assert listener.bodies.held == 0


async def test_a_strangers_headers_over_64_kib_get_431_and_the_connection_closes(
    start_gateway: StartGateway,
) -> None:
    """aiohttp bounds each header line and their number, not their sum: a
    connection without a key could hold a megabyte while its headers trickle
    in. Past 64 KiB (first head or a later one) it gets 431; a client with a
    key and a 20 KiB head is served."""
    gw = await start_gateway()
    port = gw.plane.http_port or 0
    line = b"X-Pad: " + b"v" * 1000 + b"\r\n"
    reader, writer = await connect(port)
    writer.write(b"POST /v1/messages HTTP/1.1\r\nHost: plane\r\n")
    with contextlib.suppress(ConnectionError):
        for _ in range(100):
            writer.write(line)
            await writer.drain()
    status, _, body = await answer_of(reader)
    assert (status, body) == (431, b"The request's headers are over the plane's 64 KiB limit.\n")
    assert await closed(reader, 2)

    reader, writer = await connect(port)  # a 404 first, then a head that does not end
    writer.write(b"GET /nothing HTTP/1.1\r\nHost: plane\r\n\r\n")
    assert (await answer_of(reader))[0] == 404
    writer.write(b"GET /nothing HTTP/1.1\r\nHost: plane\r\n")
    with contextlib.suppress(ConnectionError):
        for _ in range(100):
            writer.write(line)
            await writer.drain()
    assert (await answer_of(reader))[0] == 431

    headers = {f"x-pad-{n}": "v" * 1000 for n in range(20)}
    headers |= {"x-api-key": gw.keys["claude"], "anthropic-version": "2023-06-01"}
    async with local_client() as client:
        answer = await client.get(f"http://127.0.0.1:{port}/v1/models", headers=headers)
    assert answer.status_code == 200


# ── slow and silent connections ────────────────────────────────────────────


async def test_silent_slow_and_keyless_connections_are_closed_while_a_client_with_a_key_is_served(
    start_gateway: StartGateway,
) -> None:
    """With 0.3 s bounds and room for 20 strangers: 60 silent connections,
    60 sending their headers a byte at a time and 10 asking for nothing but
    404s are all closed within a second or two; the oldest go first when
    more arrive; a client with a key is served throughout."""
    gw = await start_gateway()
    limits = Limits(idle_s=0.3, stranger_s=0.3, strangers=20)
    async with listening(gw, limits) as listener:
        port = listener.port or 0
        silent = [await connect(port) for _ in range(60)]
        slow = [await connect(port) for _ in range(60)]
        busy = [await connect(port) for _ in range(10)]
        assert len(listener.door) <= 20

        async def trickle() -> None:
            for byte in head("/v1/messages", 10, {}):
                for _, writer in slow:
                    with contextlib.suppress(ConnectionError):
                        writer.write(bytes([byte]))
                await asyncio.sleep(0.05)

        async def not_found() -> None:
            while True:
                for _, writer in busy:
                    with contextlib.suppress(ConnectionError):
                        writer.write(b"GET /nothing HTTP/1.1\r\nHost: plane\r\n\r\n")
                await asyncio.sleep(0.1)

        served = 0

        async def keyed() -> None:
            nonlocal served
            headers = {"x-api-key": gw.keys["claude"], "anthropic-version": "2023-06-01"}
            async with local_client() as client:
                while True:
                    answer = await client.get(f"http://127.0.0.1:{port}/v1/models", headers=headers)
                    assert answer.status_code == 200
                    served += 1
                    await asyncio.sleep(0.05)

        tasks = [asyncio.create_task(job()) for job in (trickle, not_found, keyed)]
        try:
            await asyncio.sleep(1.2)
            left = [not await closed(reader, 0.01) for reader, _ in (*silent, *slow, *busy)].count(
                True
            )
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        print(
            f"\nhttp, 0.3 s bounds: 130 strangers, {left} open after 1.2 s; {served} calls served"
        )
        assert left == 0
        assert served >= 5
        assert listener.door.turned_away >= 110


async def test_tcp_connections_without_a_hello_are_closed_but_a_greeted_subscriber_stays(
    start_plane,
) -> None:
    plane = await start_plane()
    listener = Listener(
        plane.runtime.api.handle,
        plane.rows.snapshot,
        plane.bus,
        "test",
        plane.token,
        door=Door(16, 0.3),
    )
    port = await listener.listen_tcp("127.0.0.1", 0)
    try:
        subscriber = await PlaneClient.connect(
            plane.home.socket, tcp=("127.0.0.1", port), token=plane.token
        )
        await subscriber.request(p.Subscribe())
        strangers = [await connect(port) for _ in range(100)]
        chatty = await connect(port)  # frames, but never a hello: each is answered, then closed
        chatty[1].write(b'{"type": "status", "id": 7}\n')
        said = json.loads(await chatty[0].readline())
        assert said["message"].startswith("Say hello first")
        await asyncio.sleep(1.0)
        left = [not await closed(reader, 0.01) for reader, _ in (*strangers, chatty)].count(True)
        print(f"\ntcp, 0.3 s bound: 101 strangers, {left} still open after 1 s")
        assert left == 0
        assert subscriber.open
        assert isinstance(await subscriber.request(p.Status(), within_s=5), p.SnapshotReply)
        await subscriber.close()
    finally:
        await listener.close()


async def test_a_tcp_stranger_that_sends_a_long_line_is_refused_at_64_kib(
    start_plane,
) -> None:
    """Before its hello, a connection is read no further than 64 KiB (the
    frame limit, 1 MiB, is for the operator's own frames)."""
    plane = await start_plane(tcp=("127.0.0.1", 0))
    reader, writer = await connect(plane.plane.tcp_port)
    with contextlib.suppress(ConnectionError):
        for _ in range(20):
            writer.write(b"x" * 10_000)
            await writer.drain()
    said = json.loads(await asyncio.wait_for(reader.readline(), 5))
    assert said["code"] == "unauthorized"
    assert said["message"] == "Refused: a hello is one short line, and this one is over 64 KiB."
    assert await closed(reader, 2)


# ── a real `plane serve`, with its real bounds ─────────────────────────────


class Served:
    """`plane serve --http --tcp` in a subprocess, on the gateway config."""

    def __init__(self, tmp_path: Path, llm: ScriptedLLM) -> None:
        self.home = tmp_path / "home"
        config = tmp_path / "agents.yaml"
        text = CONFIG.replace("{base_url}", llm.base_url).replace(
            "{anthropic_url}", llm.anthropic_url
        )
        config.write_text(text)
        self.log = tmp_path / "serve.err"
        with self.log.open("w") as err:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "plane",
                    "serve",
                    "--config",
                    str(config),
                    "--http",
                    "127.0.0.1:0",
                    "--tcp",
                    "127.0.0.1:0",
                ],
                env={**os.environ, "PLANE_HOME": str(self.home)},
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        deadline = time.monotonic() + 60
        while not (
            found := re.search(
                r" and 127\.0\.0\.1:(\d+) .*the gateway on http://127\.0\.0\.1:(\d+)",
                self.log.read_text(),
            )
        ):
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, "the plane did not start"
            time.sleep(0.1)
        self.tcp_port, self.http_port = int(found.group(1)), int(found.group(2))
        self.key = Keys(Home(self.home).gateway_keys).make("claude")
        self.token = (self.home / "token").read_text().strip()

    def rss(self) -> int:
        """Resident bytes of the plane now."""
        return _status_kb(self.process.pid, "VmRSS") * 1024

    def peak_from_now(self) -> None:
        """The peak resident size counts from here (Linux's clear_refs)."""
        Path(f"/proc/{self.process.pid}/clear_refs").write_text("5")

    def peak(self) -> int:
        return _status_kb(self.process.pid, "VmHWM") * 1024

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


@pytest.fixture
def served(tmp_path: Path, scripted_llm: ScriptedLLM) -> Iterator[Served]:
    plane = Served(tmp_path, scripted_llm)
    try:
        yield plane
    finally:
        plane.stop()


async def keyless_body(port: int, size: int) -> int:
    """Headers, then `size` bytes of body sent as fast as the plane takes
    them (made as they go, never held whole); the answer's status.

    On a bare socket, sending and reading apart: the plane answers and
    closes with the body unread, so the client's next send meets a reset.
    A stream's transport closes itself on that failed send, and the answer
    the kernel already holds for it would be lost unread; here it is read."""
    loop = asyncio.get_running_loop()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setblocking(False)
        chunk = b"x" * (1 << 20)

        async def send() -> None:
            with contextlib.suppress(ConnectionError):
                keyless = {"x-api-key": "plane-claude-guessed"}
                await loop.sock_sendall(sock, head("/v1/messages", size, keyless))
                for start in range(0, size, len(chunk)):
                    await loop.sock_sendall(sock, chunk[: size - start])

        sending = asyncio.create_task(send())
        answer = b""
        try:
            async with asyncio.timeout(60):
                while b"\r\n" not in answer and (more := await loop.sock_recv(sock, 4096)):
                    answer += more
        finally:
            sending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sending
    return int(answer.split()[1])


@pytest.mark.slow
async def test_twenty_keyless_clients_of_31_mb_each_grow_the_plane_by_little(
    served: Served,
) -> None:
    await asyncio.sleep(1)  # the plane's start-up settled
    before = served.rss()
    served.peak_from_now()
    statuses = await asyncio.gather(*(keyless_body(served.http_port, 31 * MB) for _ in range(20)))
    await asyncio.sleep(0.5)
    after, peak = served.rss(), served.peak()
    grown, peaked = (after - before) / MB, (peak - before) / MB
    print(
        f"\nkeyless bodies: 20 clients x 31 MB, each answered {set(statuses)}; "
        f"the plane grew {grown:.1f} MB (peak {peaked:.1f} MB over its start)"
    )
    assert statuses == [401] * 20
    assert grown < 100 and peaked < 100


@pytest.mark.slow
async def test_128_strangers_trickling_half_a_megabyte_of_headers_each_grow_the_plane_by_little(
    served: Served,
) -> None:
    await asyncio.sleep(1)
    before = served.rss()
    served.peak_from_now()
    line = b"X-Pad: " + b"v" * 8000 + b"\r\n"
    heads = []
    for _ in range(128):
        reader, writer = await connect(served.http_port)
        writer.write(b"POST /v1/messages HTTP/1.1\r\nHost: plane\r\n")
        heads.append((reader, writer))
    for _ in range(63):  # 63 lines of 8 KB: within aiohttp's own limits, 504 KB a head
        for _, writer in heads:
            with contextlib.suppress(ConnectionError):
                writer.write(line)
        await asyncio.sleep(0.01)
    await asyncio.sleep(1)
    grown, peaked = (served.rss() - before) / MB, (served.peak() - before) / MB
    left = [not await closed(reader, 0.01) for reader, _ in heads].count(True)
    print(
        f"\nbig heads: 128 strangers x 504 KB of headers; {left} still open, the plane grew "
        f"{grown:.1f} MB (peak {peaked:.1f} MB over its start)"
    )
    assert left == 0
    assert grown < 40 and peaked < 40
    for _, writer in heads:
        writer.close()


@pytest.mark.slow
async def test_slow_and_silent_strangers_on_http_and_tcp_are_closed_within_their_bounds(
    served: Served,
) -> None:
    """500 connections sending their headers a byte a second and 500 silent
    ones on the gateway, 1,000 silent ones on `--tcp`: all closed within the
    bounds (10 s on HTTP, 5 s on TCP), while a client with a key makes calls
    and a greeted TUI connection, silent throughout, stays."""
    port = served.http_port
    tui = await PlaneClient.connect(
        served.home / "plane.sock", tcp=("127.0.0.1", served.tcp_port), token=served.token
    )
    await tui.request(p.Subscribe())
    slow = [await connect(port) for _ in range(500)]
    silent = [await connect(port) for _ in range(500)]
    tcp = [await connect(served.tcp_port) for _ in range(1000)]
    began = time.monotonic()

    async def trickle() -> None:
        for byte in head("/v1/messages", 10, {}) * 10:
            for _, writer in slow:
                with contextlib.suppress(ConnectionError):
                    writer.write(bytes([byte]))
            await asyncio.sleep(1)

    served_calls = 0

    async def keyed() -> None:
        nonlocal served_calls
        headers = {"x-api-key": served.key, "anthropic-version": "2023-06-01"}
        async with local_client() as client:
            while True:
                answer = await client.get(f"http://127.0.0.1:{port}/v1/models", headers=headers)
                assert answer.status_code == 200
                served_calls += 1
                await asyncio.sleep(0.5)

    tasks = [asyncio.create_task(trickle()), asyncio.create_task(keyed())]
    try:
        await asyncio.sleep(6.5)
        tcp_left = [not await closed(r, 0.001) for r, _ in tcp].count(True)
        await asyncio.sleep(max(0.0, began + 12 - time.monotonic()))
        http_left = [not await closed(r, 0.001) for r, _ in (*slow, *silent)].count(True)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    print(
        f"\nstrangers: of 500 slow-header and 500 silent HTTP connections {http_left} open "
        f"after 12 s; of 1,000 silent TCP connections {tcp_left} open after 6.5 s; "
        f"{served_calls} keyed calls served meanwhile"
    )
    assert (http_left, tcp_left) == (0, 0)
    assert served_calls >= 15
    assert tui.open
    assert isinstance(await tui.request(p.Status(), within_s=10), p.SnapshotReply)
    await tui.close()
