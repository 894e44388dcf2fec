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
"""

from __future__ import annotations

import gc


def settle() -> None:
    """Collect what is garbage now, then freeze the rest (at each snapshot)."""
    gc.collect()
    gc.freeze()
