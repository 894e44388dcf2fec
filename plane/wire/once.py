"""One request to the plane, answered, with the frames as plain JSON: for
`plane status`, which scripts poll, so its process loads neither pydantic
nor the protocol's models (they are most of a CLI call's start).

The frames are the protocol's own (`hello`, then the request, sent together;
the reply with the request's id, events skipped), and a test reads what this sends
with the protocol's decoder. The reply is checked to be the request's, as
THE client (`plane.wire.client`) checks it, from the pairs' wire types in
`REPLIES`; anything longer-lived uses that client.
"""

from __future__ import annotations

import json
import socket as _socket
from pathlib import Path
from typing import Any, BinaryIO

from plane.wire.errors import NotRunning, PlaneError, WrongReply, nothing_at
from plane.wire.framing import MAX_FRAME_BYTES, PROTOCOL_VERSION
from plane.wire.token import read_token

_HELLO_ID, _REQUEST_ID = 1, 2

REPLIES = {"hello": "welcome", "status": "snapshot"}
"""The reply's `type` for the requests `plane status` sends: the protocol's
pairs (`Hello` → `HelloReply`, `Status` → `SnapshotReply`) as they are on
the wire, without loading the protocol (a test holds them to it). The reply
to a request of another type is known by its id alone."""

PAGED = {
    "snapshot": (("snapshot", "agents"), "agent_rows"),
    "messages": (("messages",), "message_rows"),
    "ledger": (("entries",), "ledger_rows"),
    "spend_history": (("top",), "spend_rows"),
}
"""For each reply that may come in parts (`plane.wire.pages`), by its wire
type: where its list is, and its parts' type (a test holds it to the
protocol's `paged`)."""

ROW_DEFAULTS: dict[str, Any] = {
    "role": "",
    "status": "idle",
    "spend_today_usd": "0",
    "limit_usd": None,
    "warn_ratio": 0.8,
    "spend_level": "ok",
    "price_known": True,
    "floor_priced": False,
    "waiting": 0,
    "resumes_at": None,
    "paused": False,
    "tools": None,
    "plane": None,
    "gateway": False,
    "from_file": False,
    "burn_usd_per_hour": None,
    "reaches_ceiling_at": None,
    "hold_reason": None,
    "stepped_down_from": None,
}
"""What a snapshot's row (`AgentState`) says of a field it leaves out: a row
travels with its defaults left out (`AgentState.line`); a test holds this to
the protocol's defaults."""


def rows(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    """The snapshot's rows, each with every field."""
    return [{**ROW_DEFAULTS, **row} for row in snapshot["agents"]]


class PlaneRefused(PlaneError):
    """The plane answered with an `error` frame; `str()` is its sentence."""


def ask(
    socket: Path,
    request: dict[str, Any],
    *,
    tcp: tuple[str, int] | None = None,
    token: str | None = None,
    client: str = "plane-cli",
) -> dict[str, Any]:
    """The plane's reply to `request` (a frame without its id), as JSON;
    `NotRunning` when nothing listens, `PlaneRefused` for an `error` reply,
    `WrongReply` for a frame of another type than `REPLIES` names.

    Blocking, on a plain socket: one request and its reply need no event
    loop, and loading asyncio was a third of a `plane status` process's CPU
    before it sent a byte (an async caller runs it in a thread)."""
    try:
        if tcp is not None:
            sock = _socket.create_connection(tcp)
        else:
            sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            try:
                sock.connect(str(socket))
            except OSError:
                sock.close()
                raise
    except (FileNotFoundError, ConnectionRefusedError):
        raise nothing_at(socket, tcp) from None
    if token is None and tcp is None:
        token = read_token(socket.with_name("token"))
    hello = {"type": "hello", "id": _HELLO_ID, "protocol_version": PROTOCOL_VERSION}
    with sock, sock.makefile("rb") as reader:
        # Both at once: the plane settles a hello before it reads the next frame
        # (refused, it reads no more), and a busy plane reads a socket a few
        # times a second, so a request sent after the welcome waits a read more.
        asked = {**request, "id": _REQUEST_ID}
        sock.sendall(_line({**hello, "client": client, "token": token}) + _line(asked))
        _reply(reader, _HELLO_ID, "hello")
        return _reply(reader, _REQUEST_ID, request["type"])


def _reply(reader: BinaryIO, ident: int, asked: str) -> dict[str, Any]:
    frame = _frame(reader, ident)
    if frame.get("type") == "error":
        raise PlaneRefused(str(frame.get("message") or "The plane refused the request."))
    if frame.get("type") != REPLIES.get(asked, frame.get("type")):
        raise WrongReply(asked, str(frame.get("type")))
    return _joined(reader, ident, frame)


def _joined(reader: BinaryIO, ident: int, head: dict[str, Any]) -> dict[str, Any]:
    """`head` with the rows of its parts put back in its list, as
    `plane.wire.pages` joins them."""
    parts = head.get("parts") or 0
    if not parts or head.get("type") not in PAGED:
        return head
    path, kind = PAGED[str(head["type"])]
    rows: Any = head
    for name in path:
        rows = rows[name]
    for _ in range(parts):
        part = _frame(reader, ident)
        if part.get("type") != kind or not isinstance(part.get("rows"), list):
            raise PlaneError("The plane sent a frame this client cannot read.")
        rows.extend(part["rows"])
    head["parts"] = 0
    return head


def _frame(reader: BinaryIO, ident: int) -> dict[str, Any]:
    """The next frame with id `ident` (events and others' skipped)."""
    while True:
        try:
            line = reader.readline(_LONGEST + 1)
        except ConnectionError:
            line = b""
        if len(line) > _LONGEST:
            raise PlaneError("The plane sent a frame over the size limit.")
        if not line.endswith(b"\n"):
            raise NotRunning("the socket (the plane closed the connection)")
        try:
            frame = json.loads(line)
        except ValueError:
            raise PlaneError("The plane sent a frame this client cannot read.") from None
        if isinstance(frame, dict) and frame.get("id") == ident:
            return frame


_LONGEST = MAX_FRAME_BYTES * 2
"""The longest line read, its newline included: a frame is at most
`MAX_FRAME_BYTES`; twice that leaves room for a plane that sends more."""


def _line(frame: dict[str, Any]) -> bytes:
    return json.dumps(frame).encode() + b"\n"
