"""The one place an exception becomes a line on stderr and an exit code."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import sys
import traceback

from pydantic import ValidationError

from plane.errors import PlaneError
from plane.home import Home
from plane.wire import protocol as p
from plane.wire.words import terminal_safe

EXIT_FAILED = 1
"""The plane (or this command) refused or could not do it; stderr says why."""
EXIT_NO_ANSWER = 124
"""`send --wait` gave up waiting (as timeout(1) does)."""
EXIT_KEPT = 75
"""`send --wait` to an agent that takes no turn now (held, paused, on an
unpriced model): the message is kept and answered later, not now
(sysexits' EX_TEMPFAIL: "try again later"). Not 0: a script must tell
"answered" from "kept"."""
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
"""What a shell reports for a writer whose reader went away (`| head`)."""


class NoAnswer(PlaneError):
    """`send --wait` waited its whole timeout."""


def failed(exc: BaseException) -> int:
    """The one place an exception becomes a line on stderr and an exit code."""
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, BrokenPipeError) and _stdout_closed():
        # The reader (`head`, a pager) has what it wanted: nothing to say, and
        # nothing more may be flushed into the closed pipe at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    code = EXIT_NO_ANSWER if isinstance(exc, NoAnswer) else EXIT_FAILED
    say(_sentence(exc))
    return code


def _sentence(exc: BaseException) -> str:
    if isinstance(exc, PlaneError):
        return str(exc)
    if isinstance(exc, ValidationError):  # a request this command could not even build
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        return f"{where + ': ' if where else ''}{error['msg']}."
    if isinstance(exc, ConnectionError | EOFError | asyncio.IncompleteReadError):
        return "The plane closed the connection without answering (is it stopping?)."
    if isinstance(exc, p.BadFrame):
        return (
            f"Cannot read the plane's answer ({str(exc).rstrip('.')}); are this command and "
            "the plane the same version?"
        )
    if isinstance(exc, OSError):
        reason = exc.strerror or str(exc) or type(exc).__name__
        if "AF_UNIX path too long" in reason:
            return (
                f"The socket path {Home.from_env().socket} is too long (Unix allows 107 "
                "bytes); set PLANE_HOME to a shorter directory."
            )
        return f"{reason}: {exc.filename}." if exc.filename else f"{reason}."
    what = f"{type(exc).__name__}: {str(exc).rstrip('.')}"
    return f"Unexpected {what}. This is a bug in plane{_keep_traceback(exc)}."


def say(line: str) -> None:
    """One line, its control characters shown: a refusal may quote what was
    typed (`plane edit --limit …`), and a terminal would obey an escape in it."""
    with contextlib.suppress(OSError):
        print(f"plane: {terminal_safe(' '.join(line.split()))}", file=sys.stderr, flush=True)


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def _keep_traceback(exc: BaseException) -> str:
    """Write the traceback to the plane's log, for a bug report; say where."""
    try:
        path = Home.from_env().log
        if not path.parent.is_dir():
            return ""
        with open(path, "a", encoding="utf-8", errors="replace") as file:
            traceback.print_exception(exc, file=file)
    except Exception:
        return ""
    return f"; the traceback is in {path}"


# ── argument types: a bad value is refused by argparse, in one line ───────
