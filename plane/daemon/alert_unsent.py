"""What the plane's log says of an alert it stopped before sending: one
sentence, whichever part of the plane held the alert then (the queue that
makes offers, a fold gathering its rows, a receiver's queue), so an
operator searching the log finds every one by the same words."""

from __future__ import annotations

import logging


def unsent(log: logging.Logger, text: str, to: str | None = None) -> None:
    """Write to `log` (the part's own) the alert saying `text` that the
    plane stopped before sending, to the receiver at `to` when it was that
    one's to send: in the log, never lost silently."""
    whose = "" if to is None else f" to {to}"
    log.error("alert not sent%s (the plane stopped): %s", whose, text)
