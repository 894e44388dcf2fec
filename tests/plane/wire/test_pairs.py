"""The protocol's pairs: each request names its reply (`class Send(Request[SendReply])`),
and that one statement is what the client checks, what the plane's table of
handlers returns, and what `plane status`'s plain-JSON ask expects. The wire
stays as it was: the type strings and the bytes an older client sends and reads.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from datetime import date
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest

from plane.daemon.api import ANSWERS
from plane.wire import once
from plane.wire import protocol as p
from plane.wire.client import PlaneClient, WrongReply
from tests.tui.factories import agent, snapshot
from tui.link import Address, Backoff, Link, LinkFailed
from tui.messages import PlaneConnected

REQUESTS: tuple[type[p.Request[Any]], ...] = get_args(get_args(p.AnyRequest)[0])
REPLIES: tuple[type[p.Frame], ...] = get_args(p.Reply)
EVENTS: tuple[type[p.Frame], ...] = get_args(p.Event)
PARTS: tuple[type[p.Frame], ...] = get_args(p.Part)

WIRE = {
    "hello": "welcome",
    "subscribe": "snapshot",
    "status": "snapshot",
    "send": "sent",
    "history": "messages",
    "new_agent": "agent_created",
    "ledger": "ledger",
    "stop": "ok",
    "delete_agent": "ok",
    "pause_agent": "agent_changed",
    "rename_agent": "agent_changed",
    "edit_agent": "agent_changed",
    "interrupt": "ok",
    "show_agent": "agent_details",
    "spend_history": "spend_history",
    "spend_stack": "spend_stack",
}
"""Each request's `type` and its reply's, as every version of the protocol
has sent them: a client of any version matches on these."""

CONNECTION_S_OWN = {p.Hello, p.Subscribe}
"""Answered by the listener, which owns the connection they are about."""


def type_of(kind: type[p.Frame]) -> str:
    default = kind.model_fields["type"].default
    assert isinstance(default, str)
    return default


# ── every request names its reply, and every reply answers a request ─────


def test_every_request_names_its_reply() -> None:
    assert len(REQUESTS) >= 16, "the union is read as it is"
    for kind in REQUESTS:
        assert issubclass(kind, p.Request)
        assert kind.reply in REPLIES and kind.reply is not p.Error, kind


def test_every_reply_answers_some_request_and_error_any() -> None:
    named = {kind.reply for kind in REQUESTS}
    assert set(REPLIES) == named | {p.Error}
    assert p.Error not in named, "an error answers any request: it is no request's pair"


def test_every_frame_of_the_protocol_is_a_request_a_reply_an_event_or_a_part() -> None:
    frames = {
        kind
        for kind in vars(p).values()
        if isinstance(kind, type) and issubclass(kind, p.Frame) and "type" in kind.model_fields
    }
    # Less the generic base (a frame of no type of its own).
    frames -= {kind for kind in frames if issubclass(kind, p.Request) and kind not in REQUESTS}
    assert frames == {*REQUESTS, *REPLIES, *EVENTS, *PARTS}


def test_the_names_follow_the_rule() -> None:
    """A request is its `type` in CamelCase; the reply to one request is that
    request's name and `Reply`; a reply several share ends in `Reply` too."""
    for kind in REQUESTS:
        camel = "".join(word.capitalize() for word in type_of(kind).split("_"))
        assert kind.__name__ == camel
        sharing = [other for other in REQUESTS if other.reply is kind.reply]
        if len(sharing) == 1:
            assert kind.reply.__name__ == f"{kind.__name__}Reply"
        else:
            assert kind.reply.__name__.endswith("Reply"), kind.reply


# ── the wire is as it was ─────────────────────────────────────────────────


def test_the_type_strings_on_the_wire_are_unchanged() -> None:
    """A new request adds a pair; none that was there changes."""
    pairs = {type_of(kind): type_of(kind.reply) for kind in REQUESTS}
    assert {kind: pairs.get(kind) for kind in WIRE} == WIRE


SENT_AS_BEFORE: list[tuple[p.Request[Any], bytes]] = [
    (p.Hello(id=7, protocol_version=1, client="tui", token="t"),
     b'{"type":"hello","id":7,"protocol_version":1,"client":"tui","token":"t"}\n'),
    (p.Subscribe(id=7), b'{"type":"subscribe","id":7}\n'),
    (p.Status(id=7), b'{"type":"status","id":7}\n'),
    (p.Send(id=7, agent="demo", text="hi"),
     b'{"type":"send","id":7,"agent":"demo","text":"hi"}\n'),
    (p.History(id=7, agent="demo", limit=20, before_id=9),
     b'{"type":"history","id":7,"agent":"demo","limit":20,"before_id":9}\n'),
    (p.NewAgent(id=7, name="poet", model="m", role="writes", tools="read-only"),
     b'{"type":"new_agent","id":7,"name":"poet","model":"m","role":"writes","tools":"read-only"}\n'),
    (p.Ledger(id=7, day=date(2026, 11, 29)), b'{"type":"ledger","id":7,"day":"2026-11-29"}\n'),
    (p.Stop(id=7), b'{"type":"stop","id":7}\n'),
    (p.DeleteAgent(id=7, agent="demo"), b'{"type":"delete_agent","id":7,"agent":"demo"}\n'),
    (p.PauseAgent(id=7, agent="demo", paused=False),
     b'{"type":"pause_agent","id":7,"agent":"demo","paused":false}\n'),
    (p.RenameAgent(id=7, agent="demo", new_name="poet"),
     b'{"type":"rename_agent","id":7,"agent":"demo","new_name":"poet"}\n'),
    (p.EditAgent(id=7, agent="demo", role="r", model=None, tools=["grep"], limit="5"),
     b'{"type":"edit_agent","id":7,"agent":"demo","role":"r","model":null,"tools":["grep"],"limit":"5"}\n'),
    (p.Interrupt(id=7, agent="demo"), b'{"type":"interrupt","id":7,"agent":"demo"}\n'),
    (p.ShowAgent(id=7, agent="demo"), b'{"type":"show_agent","id":7,"agent":"demo"}\n'),
    (p.SpendHistory(id=7, agent="demo"), b'{"type":"spend_history","id":7,"agent":"demo"}\n'),
    (p.SpendStack(id=7, by="model", top=3),
     b'{"type":"spend_stack","id":7,"by":"model","top":3}\n'),
]  # fmt: skip
"""Each request as the protocol encoded it before its classes were renamed."""


@pytest.mark.parametrize(("frame", "line"), SENT_AS_BEFORE, ids=lambda f: getattr(f, "type", ""))
def test_a_request_is_sent_byte_for_byte_as_before(frame: p.Request[Any], line: bytes) -> None:
    assert p.encode(frame) == line
    assert p.decode_request(line) == frame


def test_every_request_there_was_is_in_the_byte_for_byte_table() -> None:
    assert sorted(frame.type for frame, _ in SENT_AS_BEFORE) == sorted(WIRE)


REPLY_FIELDS = {
    "welcome": ["type", "id", "protocol_version", "plane_version"],
    "snapshot": ["type", "id", "snapshot", "parts"],
    "sent": ["type", "id", "messages", "refused", "elsewhere"],
    "messages": ["type", "id", "agent", "messages", "parts"],
    "agent_created": ["type", "id", "agent"],
    "ledger": ["type", "id", "day", "entries", "parts"],
    "ok": ["type", "id"],
    "agent_changed": ["type", "id", "agent"],
    "agent_details": [
        "type", "id", "agent", "ceiling_from", "made", "workspace", "bookings", "sessions",
        "session_messages", "group",
    ],
    "spend_history": [
        "type", "id", "day", "agent", "hours", "days", "top", "models", "tools", "parts",
    ],
    "spend_stack": ["type", "id", "day", "by", "series"],
    "error": ["type", "id", "code", "message"],
}  # fmt: skip
"""Each reply's fields, in the order they are written, as before the rename
(`parts`, protocol 2's, and `elsewhere` added last: none moved)."""


def test_every_reply_is_written_with_its_fields_in_the_order_it_was() -> None:
    fields = {type_of(kind): list(kind.model_fields) for kind in REPLIES}
    assert {kind: fields.get(kind) for kind in REPLY_FIELDS} == REPLY_FIELDS


def test_a_request_built_in_python_is_numbered_by_its_client() -> None:
    assert p.Send(agent="demo", text="hi").id == 0


@pytest.mark.parametrize("kind", sorted(WIRE))
def test_a_request_on_the_wire_without_an_id_is_refused_as_before(kind: str) -> None:
    """The id has a default in Python (the client gives it); a client's frame
    still needs one, and hears the sentence it heard when it had none."""
    for line in (json.dumps({"type": kind}), json.dumps({"type": kind, "agent": "demo"})):
        with pytest.raises(p.BadFrame) as refused:
            p.decode_request(line.encode())
        assert (str(refused.value), refused.value.code) == (
            f"Bad frame: {kind}.id: Field required.",
            "bad_frame",
        )
    with pytest.raises(p.BadFrame, match=r"^Bad frame: send\.id: Field required\.$"):
        p.decode_request(b'{"type":"send","agent":"demo","text":"hi"}')


# ── the one table the plane answers from ──────────────────────────────────


def test_the_plane_answers_every_request_from_its_table() -> None:
    assert set(ANSWERS) == set(REQUESTS) - CONNECTION_S_OWN


ANSWERED: list[type[p.Request[Any]]] = sorted(ANSWERS, key=type_of)
"""The requests the plane answers from its table, by their wire names."""


@pytest.mark.parametrize("kind", ANSWERED, ids=type_of)
def test_each_handler_takes_its_request_and_returns_its_reply(kind: type[p.Request[Any]]) -> None:
    hints = get_type_hints(ANSWERS[kind])
    assert (hints["request"], hints["return"]) == (kind, kind.reply)


def test_plane_status_s_plain_json_table_is_the_protocol_s() -> None:
    by_type = {type_of(kind): kind for kind in REQUESTS}
    assert once.REPLIES, "the table is read as it is"
    for asked, answered in once.REPLIES.items():
        assert type_of(by_type[asked].reply) == answered


def test_plane_status_s_table_of_lists_in_parts_is_the_protocol_s() -> None:
    paged = {
        type_of(kind): (kind.paged.path, type_of(kind.paged.part))
        for kind in REPLIES
        if hasattr(kind, "paged")
    }
    assert paged == once.PAGED


# ── a reply of another type than the request names ────────────────────────


def confused_reply(kind: str, ident: int) -> p.Frame:
    if kind == "hello":
        return p.HelloReply(id=ident, plane_version="confused")
    if kind == "subscribe":
        return p.SnapshotReply(id=ident, snapshot=snapshot(agent("demo")))
    if kind == "ledger":
        return p.LedgerReply(id=ident, day=date(2026, 11, 29), entries=[])
    return p.OkReply(id=ident)


async def confused_plane(socket: Path) -> asyncio.Server:
    """Welcomes and subscribes as a plane does; answers `status` with an `ok`,
    and `ledger` with the ledger."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            request = json.loads(line)
            writer.write(p.encode(confused_reply(request["type"], request["id"])))
            await writer.drain()
        writer.close()

    return await asyncio.start_unix_server(serve, socket)


@pytest.fixture
async def confused(tmp_path: Path) -> AsyncIterator[Path]:
    socket = tmp_path / "plane.sock"
    async with await confused_plane(socket):
        yield socket


async def test_the_client_refuses_a_reply_of_another_type_and_goes_on(confused: Path) -> None:
    client = await PlaneClient.connect(confused, token="t")
    try:
        with pytest.raises(WrongReply) as wrong:
            await client.request(p.Status(), within_s=5)
        assert str(wrong.value) == (
            "The plane answered a `status` request with a `ok` frame, "
            "which this client did not expect."
        )
        ledger = await client.request(p.Ledger(), within_s=5)
        assert ledger.day == date(2026, 11, 29), "the connection goes on"
    finally:
        await client.close()


async def test_the_tui_s_link_says_it_as_a_refusal(confused: Path) -> None:
    connected = asyncio.Event()

    def post(message: object) -> None:
        if isinstance(message, PlaneConnected):
            connected.set()

    link = Link(Address(path=confused, token="t"), post, backoff=Backoff(0.01, 0.01))
    running = asyncio.create_task(link.run())
    try:
        await asyncio.wait_for(connected.wait(), 5)
        with pytest.raises(LinkFailed) as failed:
            await link.request(p.Status())
        assert failed.value.failure == "refused"
        assert "a `status` request with a `ok` frame" in str(failed.value)
        assert failed.value.request == p.Status()
    finally:
        running.cancel()


async def test_plane_status_s_ask_refuses_it_too(confused: Path) -> None:
    with pytest.raises(WrongReply, match="a `status` request with a `ok` frame"):
        await asyncio.to_thread(once.ask, confused, {"type": "status"}, token="t")


def test_a_request_names_what_answers_it_at_run_time() -> None:
    send: Callable[..., p.Request[Any]] = p.Send
    frame = send(agent="demo", text="hi")
    assert frame.answered_by(p.SendReply(id=1, messages=[]))
    assert not frame.answered_by(p.OkReply(id=1))
    assert not frame.answered_by(p.Error(id=1, code="invalid", message="no"))
    assert re.fullmatch(r"\w+Reply", p.Send.reply.__name__)
