"""A loop guard's history as the store keeps it (`guard_history`, written by
plane/agents/guard_book.py): what the guard needs to find a repeat begun
before a restart, as JSON, and read back strictly, so a row no plane wrote
is refused (ValueError) rather than taken for a count."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

DIGEST_BYTES = 16
"""The length of every digest the guard keeps (`plane.agents.guard.digest`)."""

_US = timedelta(microseconds=1)
"""A step's time is kept as how long before the last call's it was."""

Kept = tuple[str, str]
"""What a guard keeps across a restart, as the store keeps it: the time of
its last call, and its history as JSON."""


@dataclass(frozen=True)
class History:
    """A guard's history: its next step's index, its last call's time, the
    steps (index, time, cost) a loop may be priced from (each a step a count
    began at, its cost that of the steps up to the next one), the tool results it
    counts (digest, label, step), its three streaks (digest, count, first
    step: the same answer, the same request, calls with nothing new), the
    digests it knows (the newest last) and its workspace's digest."""

    index: int
    last_at: datetime
    steps: list[tuple[int, datetime, Decimal]]
    tools: list[tuple[bytes, str, int]]
    streaks: list[tuple[bytes | None, int, int]]
    known: list[bytes]
    workspace: bytes | None

    def kept(self) -> Kept:
        last = self.last_at
        history = {
            "index": self.index,
            "steps": [[i, (last - at) // _US, str(cost)] for i, at, cost in self.steps],
            "tools": [[d.hex(), label, i] for d, label, i in self.tools],
            "streaks": [[_hex(d), count, first] for d, count, first in self.streaks],
            "known": base64.b64encode(b"".join(self.known)).decode("ascii"),
            "workspace": _hex(self.workspace),
        }
        # ASCII: a label may hold what a tool call's arguments held, a lone
        # surrogate too, which no store's UTF-8 takes (escaped, it reads back).
        text = json.dumps(history, separators=(",", ":"))
        return self.last_at.isoformat(), text

    @classmethod
    def read(cls, kept: Kept, label_chars: int) -> History:
        """`kept` as a guard wrote it; ValueError, saying why, if no guard did."""
        at, text = kept
        try:
            last_at = _at(at)
            data: Any = json.loads(text)
            index = _count(data["index"])
            steps = [
                (_count(i), last_at - _count(before) * _US, _cost(cost))
                for i, before, cost in data["steps"]
            ]
            tools = [
                (_digest(d), _label(label, label_chars), _count(i)) for d, label, i in data["tools"]
            ]
            streaks = [
                (None if d is None else _digest(d), _count(count), _count(first))
                for d, count, first in data["streaks"]
            ]
            known = base64.b64decode(data["known"], validate=True)
            looked = data["workspace"]
            workspace = None if looked is None else _digest(looked)
        except (TypeError, KeyError, ArithmeticError, AttributeError) as error:
            raise ValueError(f"not a guard's history ({error!r})") from None
        if len(streaks) != 3 or len(known) % DIGEST_BYTES:
            raise ValueError("not a guard's history (its parts do not fit)")
        if any(i >= index for i, _, _ in steps) or any(i >= index for _, _, i in tools):
            raise ValueError("not a guard's history (a step after its last)")
        digests = [known[n : n + DIGEST_BYTES] for n in range(0, len(known), DIGEST_BYTES)]
        return cls(index, last_at, steps, tools, streaks, digests, workspace)


def _hex(digest: bytes | None) -> str | None:
    return None if digest is None else digest.hex()


def _digest(text: object) -> bytes:
    try:
        found = bytes.fromhex(text) if isinstance(text, str) else b""
    except ValueError:
        found = b""
    if len(found) != DIGEST_BYTES:
        raise ValueError(f"{text!r} is not a digest")
    return found


def _count(value: object) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"{value!r} is not a count")
    return value


def _at(text: object) -> datetime:
    try:
        found = datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        found = None
    if found is None or found.tzinfo is None:
        raise ValueError(f"{text!r} is not a time")
    return found


def _cost(text: object) -> Decimal:
    try:
        found = Decimal(text) if isinstance(text, str) else None
    except ArithmeticError:
        found = None
    if found is None or not found.is_finite():
        raise ValueError(f"{text!r} is not an amount")
    return found


def _label(text: object, most: int) -> str:
    if not isinstance(text, str) or len(text) > most:
        raise ValueError(f"{text!r} is not a call's label")
    return text
