"""Keeping the garbage collector's full passes out of a keypress.

With 1,000 agents the client holds about 100,000 objects that live as long
as it does (the rows, the widgets, Textual's caches). Python's collector
walks all of them in each full pass, and with 200 spend updates a second
it made one every two seconds or so: 40 to 150 ms each, during which no key
is answered (the p99 of bench/tui.py). Once the plane's snapshot is in,
what exists is what stays, so it is moved out of the collector's sight
(`gc.freeze`): later passes walk only what came after. Objects frozen are
still freed when their last reference goes; only a cycle among them is
kept, and at each connect that is a screenful at most.

What comes after still grows (conversations fetched, every agent's state
replaced by its updates), and a full pass over it took ~20 ms, every two
seconds, started by whatever allocated at the time: mostly a key's own
work, so it landed in the key (the p99 of bench/tui.py with long
conversations). So the collector makes no full pass of its own while the
app runs (`hold`); the app asks for one every `FULL_PASS_S`, just after a
screen update (`full_pass`), when the key that caused it is painted. The
young generations are collected as before.
"""

from __future__ import annotations

import gc

FULL_PASS_S = 2.0
"""How often the app makes a full pass: the collector's own pace under load."""
NEVER = 1_000_000
"""A third threshold the collector never reaches (young passes between full ones)."""

_thresholds: tuple[int, int, int] | None = None
"""The collector's own thresholds while they are held."""


def settle() -> None:
    """Collect what is garbage now, then freeze the rest (at each snapshot)."""
    gc.collect()
    gc.freeze()


def hold() -> None:
    """No full pass unless asked for (`full_pass`), until `release`."""
    global _thresholds
    if _thresholds is None:
        _thresholds = gc.get_threshold()
        gc.set_threshold(_thresholds[0], _thresholds[1], NEVER)


def release() -> None:
    """The collector's own thresholds again."""
    global _thresholds
    if _thresholds is not None:
        gc.set_threshold(*_thresholds)
        _thresholds = None


def full_pass() -> None:
    gc.collect()
