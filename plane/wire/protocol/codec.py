"""Frames to lines and back: `encode` a frame as its line, `decode_request`
(the plane reading a client), `decode_server_frame` (a client reading the
plane); `BadFrame` for a line that is no frame, and its `UnknownFrame` for a
frame of a type this side does not know (a newer peer's).

A line is refused unread past `MAX_FRAME_BYTES`; each validator is built the
first time it is needed, not at import.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, TypeVar, get_args

from pydantic import Field, TypeAdapter, ValidationError
from pydantic_core import from_json

from plane.wire.framing import MAX_FRAME_BYTES
from plane.wire.protocol.events import Event
from plane.wire.protocol.replies import ErrorCode, Reply
from plane.wire.protocol.requests import AnyRequest
from plane.wire.protocol.state import Frame, Part

ServerFrame = Annotated[Reply | Event | Part, Field(discriminator="type")]

_SERVER_FRAMES: dict[str, type[Frame]] = {
    kind.model_fields["type"].default: kind
    for kind in (*get_args(Reply), *get_args(Event), *get_args(Part))
}

_REQUEST_TYPES = frozenset(
    kind.model_fields["type"].default for kind in get_args(get_args(AnyRequest)[0])
)

T = TypeVar("T")


@functools.cache
def _requests() -> TypeAdapter[AnyRequest]:
    return TypeAdapter(AnyRequest)


@functools.cache
def _server_frames() -> TypeAdapter[ServerFrame]:
    return TypeAdapter(ServerFrame)


class BadFrame(ValueError):
    """A line that is not a valid frame. `id` is the request's id when the
    line was JSON with an integer id, so the error reply can name it."""

    def __init__(self, code: ErrorCode, message: str, id: int | None = None) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.id = id


class UnknownFrame(BadFrame):
    """A frame whose `type` this side does not know: a newer peer's. A client
    skips it (and logs it) rather than giving up on the connection."""

    def __init__(self, kind: str) -> None:
        super().__init__("bad_frame", f"A frame of a type this client does not know: {kind!r}.")
        self.kind = kind


def encode(frame: Frame) -> bytes:
    return frame.model_dump_json().encode() + b"\n"


def decode_request(line: bytes) -> AnyRequest:
    """The request on `line`, its `id` required: a client's frame without one
    is refused, as it always was (the default is for frames built in Python,
    which the client numbers as it sends them)."""
    try:
        request = _decode(_requests().validate_json, line)
    except BadFrame as exc:
        # Said first, as when `id` had no default: the fields are checked in order.
        kind = _missing_id(line) if exc.code == "bad_frame" else None
        if kind is not None:
            raise _without_id(kind) from None
        raise
    if "id" not in request.model_fields_set:
        raise _without_id(request.type)
    return request


def decode_server_frame(line: bytes) -> ServerFrame:
    """A reply or an event; `UnknownFrame` for one of a type not in this
    protocol (a newer plane's event), `BadFrame` for anything else unreadable.

    The frame is read by the validator of its own type, so a client builds
    the validators of the frames it meets, not of every frame there is."""
    _refuse_too_large(line)
    kind = _type_of(line)
    if kind is None:  # not an object with a type: the union says what is wrong
        return _decode(_server_frames().validate_json, line)
    frame = _SERVER_FRAMES.get(kind)
    if frame is None:
        raise UnknownFrame(kind)
    return _decode(frame.model_validate_json, line)  # type: ignore[return-value]


def _decode(validate: Callable[[bytes], T], line: bytes) -> T:
    _refuse_too_large(line)
    try:
        return validate(line)
    except ValidationError as exc:
        raise BadFrame("bad_frame", _describe(exc), _id_of(line)) from None


def _refuse_too_large(line: bytes) -> None:
    if len(line) > MAX_FRAME_BYTES:
        raise BadFrame("too_large", f"Frame of {len(line)} bytes is over the 1 MiB limit.")


def _describe(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"Bad frame: {where + ': ' if where else ''}{first['msg']}."


def _without_id(kind: str) -> BadFrame:
    return BadFrame("bad_frame", f"Bad frame: {kind}.id: Field required.")


def _missing_id(line: bytes) -> str | None:
    """The request's type, when `line` is a request of a known type without an id."""
    try:
        value = from_json(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or "id" in value or value.get("type") not in _REQUEST_TYPES:
        return None
    return str(value["type"])


def _id_of(line: bytes) -> int | None:
    ident = _field(line, "id")
    return ident if isinstance(ident, int) and not isinstance(ident, bool) else None


def _type_of(line: bytes) -> str | None:
    kind = _field(line, "type")
    return kind if isinstance(kind, str) else None


def _field(line: bytes, name: str) -> object:
    try:
        # pydantic's parser has a depth limit and says so with a ValueError;
        # json.loads raises RecursionError on a frame nested ~1,000 deep.
        value = from_json(line)
    except (ValueError, RecursionError):
        return None
    return value.get(name) if isinstance(value, dict) else None
