"""Argument types: a bad value is refused by argparse, in one line."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from datetime import date

MAX_WAIT_S = 7 * 24 * 3600.0


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_WAIT_S):
        raise argparse.ArgumentTypeError(
            f"wants a number of seconds over 0 (at most {MAX_WAIT_S:.0f}), not {text!r}"
        )
    return value


def day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a day like 2026-11-29") from None


def text(what: str, *, blank: bool = False) -> Callable[[str], str]:
    """Text for the plane: UTF-8 (a terminal's undecodable bytes are not), and
    not empty unless `blank`."""

    def check(text: str) -> str:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise argparse.ArgumentTypeError(f"the {what} is not valid UTF-8") from None
        if not blank and not text.strip():
            raise argparse.ArgumentTypeError(f"the {what} is empty")
        return text

    check.__name__ = what  # argparse names the type in some messages
    return check


def address(text: str) -> tuple[str, int]:
    """An address to listen on."""
    return _host_port(text, "like 127.0.0.1:7878 (port 0 picks a free one)")


def peer(text: str) -> tuple[str, int]:
    """An address to reach, not to listen on: port 0 picks a free port only
    for a listener, and a client (or the lines `gateway env` prints) aimed at
    it reaches nothing."""
    host, port = _host_port(text, "like 127.0.0.1:7878")
    if port == 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} has port 0, which only a listener can use; give the port the plane "
            "said it listens on"
        )
    return host, port


def _host_port(text: str, example: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")  # [::1]:7878
    if not host or not (port.isascii() and port.isdigit()) or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT, {example}")
    return host, int(port)


def tag(text: str) -> str:
    """A tag gateway calls carry (`plane.config.TAG`)."""
    from plane.config import TAG, TAG_RULE  # only when one is given: pydantic stays unloaded

    if not TAG.match(text):
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a tag ({TAG_RULE})")
    return text
