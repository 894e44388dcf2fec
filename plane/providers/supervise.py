"""Keeping the embedded model up: a watcher restarts its child when it dies.

    the child exits      one warning line (pid, exit code or signal)
                         → wait the backoff → start a new child on the same port
    the start fails      one error line (why) → wait twice as long, at most 30 s → again
    up for a minute      the next crash waits 0.5 s again, not where the backoff was
    stop()               the watcher stands down first: nothing restarts, nothing is left
    stand_down()         a plane that is stopping: what exits is not restarted, nor said
    killed by SIGTERM    (or SIGINT, SIGHUP) a grace for the plane's stand-down first: the
                         signal most likely reached the plane's whole process group

Why a thread and not an asyncio task: the model is started and stopped with
no event loop (a test session's fixture shares one across loops), and a
thread blocked in `waitpid` learns of the exit the moment it happens.

The new child listens on the port the first one had, so a provider built at
start-up, whose base URL is fixed, reaches it without being rebuilt. Between
the two, its calls fail to connect and its own retries wait; a provider built
with `WhenReady` among its client's middlewares waits for the restart instead,
and fails at once with the reason when a restart has failed.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp

from plane.errors import ProviderError

log = logging.getLogger(__name__)

WHAT = "The embedded model"
STOP_SIGNALS = frozenset({-signal.SIGTERM, -signal.SIGINT, -signal.SIGHUP})
"""Exit codes of a child ended as a plane is stopped: a terminal's Ctrl-C and
systemd's stop signal the plane's whole group, its model with it."""
STOP_GRACE_S = 2.0
"""How long a child ended so waits for the plane's stand-down before it is
said dead and restarted: the plane's own handler runs in the same moments."""


@dataclass(frozen=True)
class Backoff:
    first_s: float = 0.5
    most_s: float = 30.0
    reset_after_s: float = 60.0
    """A child that served this long before dying died of something new:
    its restart waits `first_s` again."""

    def after(self, delay: float) -> float:
        return min(self.most_s, delay * 2)


def exit_reason(code: int) -> str:
    """How a child ended, as `Popen.returncode` tells it (negative: a signal)."""
    if code >= 0:
        return f"exited with code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"was killed by {name}"


def why_not(exc: Exception) -> str:
    """A failed start as one sentence; a `ProviderError` already is one."""
    if isinstance(exc, ProviderError):
        return str(exc)
    return f"{WHAT} did not start: {type(exc).__name__}: {exc}."


class Supervisor:
    """Restarts a child whenever it exits, from `watch()` until `stop()`.

    `wait_exit` blocks until the current child exits and returns its pid and
    exit code; `relaunch` starts a new one and returns once it serves, or
    raises `ProviderError` saying why it did not."""

    def __init__(
        self,
        wait_exit: Callable[[], tuple[int, int]],
        relaunch: Callable[[], None],
        backoff: Backoff,
    ) -> None:
        self.backoff = backoff
        self.restarts = 0
        """Restarts attempted since the model was started, failed ones included."""
        self.down_because: str | None = None
        """Why the last restart failed, until one succeeds."""
        self._wait_exit = wait_exit
        self._relaunch = relaunch
        self._stopping = threading.Event()
        self._stopping.set()
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def stopping(self) -> bool:
        """Stopped, or never started: no child may be started now."""
        return self._stopping.is_set()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def arm(self) -> None:
        """Allow children to start (the first one is started by the model)."""
        self._stopping.clear()
        self.restarts, self.down_because = 0, None

    def watch(self) -> None:
        """The first child serves: restart it, and every one after it, on exit."""
        self._ready.set()
        self._thread = threading.Thread(
            target=self._run, name="embedded-model-watcher", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stand down: whatever exits from now on is not restarted. The caller
        ends the child, then `join()`s."""
        self._stopping.set()
        self._ready.clear()

    def stand_down(self) -> None:
        """The plane is stopping: a child that exits from now on (a signal to
        the plane's group ends it too) is neither restarted nor said to be,
        while one still serving answers its calls until `stop()`."""
        self._stopping.set()

    def join(self, timeout_s: float = 10) -> None:
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)

    def _run(self) -> None:
        delay = self.backoff.first_s
        while True:
            up_since = time.monotonic()
            pid, code = self._wait_exit()
            if self.stopping:
                return
            self._ready.clear()
            if self._ended_with_the_plane(code):
                return
            if time.monotonic() - up_since >= self.backoff.reset_after_s:
                delay = self.backoff.first_s
            log.warning(
                "%s (pid %d) %s; restarting it in %g s.", WHAT, pid, exit_reason(code), delay
            )
            next_delay = self._restart(delay)
            if next_delay is None:
                return
            delay = next_delay

    def _ended_with_the_plane(self, code: int) -> bool:
        """Whether a child ended by a stop signal was ended with the plane:
        it stands down within the grace (`STOP_GRACE_S`)."""
        return code in STOP_SIGNALS and self._stopping.wait(STOP_GRACE_S)

    def _restart(self, delay: float) -> float | None:
        """Relaunch after `delay`, doubling it after each failure, until a
        child serves; the delay for the next crash, or None once stopping."""
        while not self._stopping.wait(delay):
            self.restarts += 1
            delay = self.backoff.after(delay)
            try:
                self._relaunch()
            except Exception as exc:  # any failure: a watcher that died would restart nothing
                if self.stopping:
                    return None
                self.down_because = why_not(exc)
                log.error("%s Trying again in %g s.", self.down_because, delay)
                continue
            self.down_because = None
            self._ready.set()
            return delay
        return None

    async def until_ready(self, timeout_s: float) -> None:
        """Return once a child serves. While a restart is under way, wait for
        it (at most `timeout_s`); once one has failed, raise at once with the
        reason rather than hold every call for the next try."""
        deadline = time.monotonic() + timeout_s
        while not self.ready:
            if self.stopping:
                raise ProviderError(f"{WHAT} is stopped.")
            if self.down_because:
                raise ProviderError(f"{self.down_because} The plane keeps trying to restart it.")
            if time.monotonic() > deadline:
                raise ProviderError(
                    f"{WHAT} did not come back within {timeout_s:g} s of a restart."
                )
            await asyncio.sleep(0.05)


class WhenReady:
    """An aiohttp client middleware: each request is sent only once the
    supervised child serves, so a call that arrives mid-restart waits rather
    than fails; a child that cannot come up fails the call with one
    `ProviderError` that says why (not a connection error, which the
    provider would retry to no purpose)."""

    def __init__(self, supervisor: Supervisor, timeout_s: float) -> None:
        self._supervisor = supervisor
        self._timeout_s = timeout_s

    async def __call__(
        self, request: aiohttp.ClientRequest, handler: aiohttp.ClientHandlerType
    ) -> aiohttp.ClientResponse:
        await self._supervisor.until_ready(self._timeout_s)
        return await handler(request)
