"""A zero-latency OpenAI-compatible server for the benches: every
`POST /v1/chat/completions` is answered at once with a short streamed reply
(SSE over chunked transfer encoding, with its usage, then `[DONE]`), on a
keep-alive connection.

    python bench/zero_server.py    # prints its port, then serves until killed

It runs in a process of its own, so that what it spends is not counted to the
client measured. `GET /stats` answers how many connections carried a call and
how many calls were answered (its own connection is not counted);
`POST /reset` sets both to zero.

Written on asyncio's protocols, not `http.server`: it must answer many times
faster than the client it serves, or the bench would measure it.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys

CHUNKS = (
    {"role": "assistant", "content": ""},
    {"content": "Hello"},
    {"content": " there"},
    {"content": "."},
)
USAGE = {
    "prompt_tokens": 1200,
    "completion_tokens": 3,
    "total_tokens": 1203,
    "prompt_tokens_details": {"cached_tokens": 1000},
}
LENGTH = re.compile(rb"content-length:\s*(\d+)", re.IGNORECASE)
MODEL = re.compile(rb'"model"\s*:\s*"([^"]*)"')


def _chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _event(data: str) -> bytes:
    return _chunk(f"data: {data}\n\n".encode())


def reply(model: str) -> bytes:
    """The whole streamed response: headers, events, the terminating chunk."""
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n"
    )
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "model": model}
    events = [
        _event(json.dumps({**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}))
        for d in CHUNKS
    ]
    finish = {"index": 0, "delta": {}, "finish_reason": "stop"}
    events.append(_event(json.dumps({**base, "choices": [finish]})))
    events.append(_event(json.dumps({**base, "choices": [], "usage": USAGE})))
    events.append(_event("[DONE]"))
    return head + b"".join(events) + b"0\r\n\r\n"


class Stats:
    connections = 0
    calls = 0


_REPLIES: dict[bytes, bytes] = {}


def _plain(status: str, body: bytes) -> bytes:
    return b"HTTP/1.1 %s\r\ncontent-length: %d\r\n\r\n%s" % (status.encode(), len(body), body)


class Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self.buffer = b""
        self.counted = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head = self.buffer[:end]
            found = LENGTH.search(head)
            size = int(found.group(1)) if found else 0
            if len(self.buffer) < end + 4 + size:
                return  # the body is still arriving
            body = self.buffer[end + 4 : end + 4 + size]
            self.buffer = self.buffer[end + 4 + size :]
            self.answer(head.split(b" ", 2)[:2], body)

    def answer(self, line: list[bytes], body: bytes) -> None:
        assert self.transport is not None
        method, path = line
        if path.endswith(b"/chat/completions"):
            if not self.counted:
                self.counted = True
                Stats.connections += 1
            Stats.calls += 1
            found = MODEL.search(body)
            model = found.group(1) if found else b"bench-model"
            if model not in _REPLIES:
                _REPLIES[model] = reply(model.decode())
            self.transport.write(_REPLIES[model])
        elif path == b"/stats":
            stats = {"connections": Stats.connections, "calls": Stats.calls}
            self.transport.write(_plain("200 OK", json.dumps(stats).encode()))
        elif path == b"/reset" and method == b"POST":
            Stats.connections = Stats.calls = 0
            self.transport.write(_plain("200 OK", b"{}"))
        else:
            self.transport.write(_plain("404 Not Found", b"{}"))


async def serve() -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Connection, "127.0.0.1", 0, backlog=4096)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        sys.exit(0)
