"""A request that failed, as its one error reply: what every request of the
socket says when it fails, decided here once.

- The store being away (in the failure or what caused it): the sentence the
  plane says of it everywhere (`plane status`, a send's refusal), and for a
  request that would change something, that nothing did — never the store's
  own error, its host and port (an approval link's page says the same:
  plane/daemon/approvals.py).
- A `PlaneError`: its code and its sentence.
- The store refusing otherwise: in the plane's words, with the store's.
- Anything else: one sentence that points at plane.log, where it is logged.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

from plane.errors import PlaneError, StoreUnreachable, away
from plane.wire import protocol as p
from plane.wire.words import request_refused, store_failed

log = logging.getLogger(__name__)

INTERNAL = "The plane failed to handle this request; the details are in plane.log."


def store_away(exc: BaseException, *, changes: bool) -> str | None:
    """What the plane says of a request that failed with `exc`, if that
    is the store being away (None: something else, or a send's refusal,
    which says it already); `changes`: the request would have changed
    something (then nothing did, unless the link broke during its COMMIT)."""
    fault = None if isinstance(exc, StoreUnreachable) else away(exc)
    if fault is None or fault.since is None:
        return None
    return request_refused(fault.since, changes=changes and not fault.kept_unknown)


def error_reply(request: p.Request[Any], exc: Exception) -> p.Error:
    """The error frame that answers `request`, which failed with `exc`."""
    if (said := store_away(exc, changes=request.changes)) is not None:
        log.warning("request %s: the store is away: %s", request.type, exc)
        return p.Error(id=request.id, code="internal", message=said)
    if isinstance(exc, PlaneError):
        return p.Error(id=request.id, code=exc.code, message=str(exc))
    if isinstance(exc, sqlite3.Error):  # the store refusing: said in its words, once
        log.warning("request %s: the store failed it: %s", request.type, exc)
        return p.Error(id=request.id, code="internal", message=store_failed("request", exc))
    log.error("request %s", request.type, exc_info=exc)
    return p.Error(id=request.id, code="internal", message=INTERNAL)
