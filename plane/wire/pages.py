"""A frame whose list may be too long for one line: its head, then the list in parts.

Some lists grow with the fleet or the day: a snapshot's rows (~130 bytes an
agent: 13 MB at 100,000 agents), a day's ledger entries, a conversation's
messages, the day's spenders. A frame that carries one says where it is
(`Paged`); when the frame would be longer than `PAGE_BYTES`, it goes as its
head — the frame with that list empty and `parts` set — then that many part
frames (`AgentRows`, `LedgerRows`, …), each under `PAGE_BYTES`, carrying the
head's id (none, after an event). Nothing else of that reply comes between
them, and a reader joins them (`Joining`) before anyone reads the frame: a
caller gets the whole reply, as if it had come in one line, and no line is
longer than a reader takes (`MAX_FRAME_BYTES`).

Rows are written as they were encoded once (`AgentState.line`, its defaults
left out): the plane keeps a row's state until it changes, so a snapshot
encodes only the rows that changed since the last one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from plane.wire.framing import PAGE_BYTES
from plane.wire.protocol import AgentState, BadFrame, Frame, Paged, Part, encode


def lines(frame: Frame) -> bytes:
    """`frame` as it goes on the socket: one line, or its head and parts."""
    paged = _paged(frame)
    if paged is None:
        return encode(frame)
    rows = [_line(row) for row in _at(frame, paged.path)]
    pages = _pages(rows)
    empty = _with(frame, paged.path, [])
    if len(pages) <= 1:
        return _spliced(encode(empty), paged.path[-1], pages[0] if pages else [])
    head = encode(empty.model_copy(update={"parts": len(pages)}))
    ident = getattr(frame, "id", None)
    return head + b"".join(_part(paged.part, ident, page) for page in pages)


class Joining:
    """The parts of the frames being joined on one connection, by their
    head's id (None: an event's)."""

    def __init__(self) -> None:
        self._open: dict[int | None, tuple[Frame, list[Part]]] = {}

    def take(self, frame: Frame) -> Frame | None:
        """`frame` whole, once it is: None while its parts are still coming.
        A part of no head, or of another kind than its head's, is a `BadFrame`."""
        if isinstance(frame, Part):
            return self._part(frame)
        if _paged(frame) is not None and _parts(frame):
            self._open[getattr(frame, "id", None)] = (frame, [])
            return None
        return frame

    def _part(self, part: Part) -> Frame | None:
        started = self._open.get(part.id)
        if started is None:
            raise BadFrame("bad_frame", f"A {part.type} frame follows no frame of its list.")
        head, parts = started
        paged = _paged(head)
        if paged is None or type(part) is not paged.part:
            raise BadFrame("bad_frame", f"A {part.type} frame follows a frame of another list.")
        parts.append(part)
        if len(parts) < _parts(head):
            return None
        del self._open[part.id]
        return joined(head, parts)


def joined(head: Frame, parts: Sequence[Part]) -> Frame:
    """The frame `head` and its `parts` were sent as."""
    paged = _paged(head)
    assert paged is not None, "only a paged frame has parts"
    rows = [*_at(head, paged.path), *(row for part in parts for row in part.rows)]
    return _with(head, paged.path, rows).model_copy(update={"parts": 0})


def _paged(frame: Frame) -> Paged | None:
    """Where `frame`'s list is, if it is a frame sent in parts when long."""
    paged: Paged | None = getattr(type(frame), "paged", None)
    return paged


def _parts(frame: Frame) -> int:
    parts: int = getattr(frame, "parts", 0)
    return parts


def _line(row: Frame) -> bytes:
    if isinstance(row, AgentState):
        return row.line
    return row.model_dump_json(exclude_defaults=True).encode()


def _pages(rows: list[bytes]) -> list[list[bytes]]:
    """The rows in pages of at most `PAGE_BYTES` (a longer row alone)."""
    pages: list[list[bytes]] = []
    page: list[bytes] = []
    size = 0
    for row in rows:
        if page and size + len(row) + 1 > PAGE_BYTES:
            pages.append(page)
            page, size = [], 0
        page.append(row)
        size += len(row) + 1
    if page:
        pages.append(page)
    return pages


def _part(kind: type[Part], ident: int | None, page: list[bytes]) -> bytes:
    kind_name = kind.model_fields["type"].default
    head = f'{{"type":"{kind_name}",' + ("" if ident is None else f'"id":{ident},')
    return head.encode() + b'"rows":[' + b",".join(page) + b"]}\n"


def _spliced(line: bytes, key: str, page: list[bytes]) -> bytes:
    """`line` (the frame encoded with its list empty) with the list put back.

    The list's field is the first `"key":[]` in the line: the fields before
    it in every paged frame are numbers, dates, strings and lists of other
    keys, and inside a JSON string every quote is escaped, so no value can
    hold those bytes (`tests/plane/wire/test_pairs.py` holds each paged frame to it)."""
    empty = f'"{key}":[]'.encode()
    at = line.index(empty) + len(empty) - 1
    return line[:at] + b",".join(page) + line[at:]


def _at(frame: Any, path: tuple[str, ...]) -> list[Any]:
    for name in path:
        frame = getattr(frame, name)
    return list(frame)


def _with(frame: Frame, path: tuple[str, ...], rows: list[Any]) -> Frame:
    """`frame` with the list at `path` replaced (no validation: the rows are
    the frame's own, or validated as their part was read)."""
    if len(path) == 1:
        return frame.model_copy(update={path[0]: rows})
    inner = getattr(frame, path[0])
    return frame.model_copy(update={path[0]: _with(inner, path[1:], rows)})
