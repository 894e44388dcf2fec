"""The plane: start up, serve until told to stop, shut down.

Like uvicorn's server, given what `Config.load()` built: `startup()` takes
the home's lock, has the runtime built once (`plane.daemon.assemble`: the
store opened, what a crash left recovered, every provider's key checked
before the embedded model is started), then starts it — the fleet's leases,
the agents' workers, the scheduler, the alerts — and listens; `serve()`
waits on a stop event (signal handlers only set it); `shutdown()` closes
everything in the reverse order it was opened: it stops accepting, lets
turns in flight finish within a timeout, cancels the rest, closes the
providers and the store. A start-up that fails closes what it opened, so a
refusal leaves nothing running.

Lifecycle only: what each request asks is `plane.daemon.api`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import logging
import os
import sqlite3
from collections.abc import Callable, Coroutine, Mapping
from importlib.metadata import version
from typing import IO, TYPE_CHECKING, Any

from plane import collector
from plane.agents.crew import Crew
from plane.clock import Clock, SystemClock
from plane.config import EMBEDDED_MODEL, Config
from plane.daemon.assemble import Runtime, Wanted, assemble
from plane.daemon.events import EventBus
from plane.daemon.listener import Listener
from plane.errors import PlaneError, StoreError, StoreFault
from plane.home import Home, say_state
from plane.providers.connections import Connect
from plane.store.sqlite import refusal
from plane.wire.words import some_names

if TYPE_CHECKING:  # aiohttp, loaded only with --http
    from plane.daemon.http import HttpListener

log = logging.getLogger(__name__)

RESTART_S = (0.5, 60.0)
"""A task of the plane's life that fails is started again after the first of
these many seconds, doubling up to the second."""


async def _kept_running(work: Callable[[], Coroutine[Any, Any, None]], name: str) -> None:
    """`work` run until it returns; each time it fails, said in the log and
    run again: a task of the plane's life (the scheduler, say) that ended on
    an error nobody foresaw would leave the plane without it, silently."""
    wait, most = RESTART_S
    while True:
        try:
            return await work()
        except Exception:
            log.exception("the plane's %s task failed; started again in %g s", name, wait)
        await asyncio.sleep(wait)
        wait = min(wait * 2, most)


SHUTDOWN_GRACE_S = 10.0


class AlreadyRunning(PlaneError):
    pass


class Plane:
    def __init__(
        self,
        config: Config,
        home: Home,
        clock: Clock | None = None,
        *,
        tcp: tuple[str, int] | None = None,
        http: tuple[str, int] | None = None,
        connectors: Mapping[str, Connect] | None = None,
    ) -> None:
        self.config = config
        self.home = home
        self.clock: Clock = clock or SystemClock()
        self.stop_event = asyncio.Event()
        self.tcp_port: int | None = None
        self._tcp = tcp
        self._http = http
        self.http_port: int | None = None
        """The gateway's port (`--http`), once listening."""
        self._connectors = connectors
        self.bus = EventBus()
        """What the clients are told; the agents reach it only through `emit`."""
        self.runtime: Runtime | None = None
        """Every part, once built (`plane.daemon.assemble`)."""
        self._closing = contextlib.AsyncExitStack()
        """What was opened and started, closed in the reverse order at shutdown."""
        self._lock: IO[str] | None = None
        self._http_listener: HttpListener | None = None
        """The gateway's listener (`plane.daemon.http`), once listening."""

    # ── lifecycle ──────────────────────────────────────────────────────────

    async def startup(self) -> None:
        """Start, or close what was opened and raise one `PlaneError` saying
        why: a start that fails leaves no thread, child, socket or lock. What
        the start built lives as long as the plane (a worker, its task and its
        row for each agent): the collector waits meanwhile, and it is then
        frozen out of the collector's sight (`plane.collector.kept`)."""
        try:
            with collector.kept():
                await self._start()
        except BaseException as exc:
            try:
                await self.shutdown()
            except Exception:  # the first failure is the one to report
                log.exception("closing after a failed start also failed")
            if isinstance(exc, StoreFault):  # the PostgreSQL store failed during start-up
                raise StoreError(f"The store failed during start-up: {exc}.") from None
            if isinstance(exc, sqlite3.Error):  # read after the store opened it: plane.db's
                raise refusal(self.home.db, exc) from None
            raise
        log.info("%s", self.started())
        assert self.runtime is not None
        crew = self.runtime.crew
        self._background(lambda: self._freeze_once_settled(crew), name="settle")

    @staticmethod
    async def _freeze_once_settled(crew: Crew) -> None:
        """Freeze again once every worker has done its first work: what a
        worker keeps while it waits (its wait, its context, its decimal
        context: ~15 objects an agent) is made then, mostly after the start
        returned. Left in sight, at 10,000 agents each full pass of the
        collector took ~100 ms with 1,000 agents busy, holding the loop a
        time or so a second; ~40 ms once they are frozen."""
        await crew.settled()
        collector.freeze()

    def started(self) -> str:
        """The start line: where clients reach the plane, and what it runs."""
        assert self.runtime is not None
        where = str(self.home.socket)
        if self._tcp is not None and self.tcp_port is not None:
            host = self._tcp[0]
            host = f"[{host}]" if ":" in host else host
            where += f" and {host}:{self.tcp_port}"
        where += f" (token in {self.home.token})"
        if (gateway := self.gateway_url()) is not None:
            where += f"; the gateway on {gateway}"
        names = [spec.name for spec in self.runtime.services.roster]
        agents = "no agents"
        if names:
            agents = f"{len(names):,} agent{'' if len(names) == 1 else 's'} ({some_names(names)})"
        model = ""
        if (embedded := self.runtime.providers.model) is not None:
            model = f"; the embedded model ({EMBEDDED_MODEL}) at {embedded.base_url}"
        return f"serving on {where}; {agents}{model}"

    def gateway_url(self) -> str | None:
        """Where a client on this machine reaches the gateway, once it listens
        (a wildcard address is reached on the loopback)."""
        if self._http is None or self.http_port is None:
            return None
        host = self._http[0]
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
        return f"http://{f'[{host}]' if ':' in host else host}:{self.http_port}"

    async def _start(self) -> None:
        self.home.ensure()
        self._lock = _lock(self.home)
        self._closing.callback(self._unlock)
        wanted = Wanted(
            bus=self.bus,
            stop=self.stop_event.set,
            http=self._http,
            http_port=lambda: self.http_port,
            connectors=self._connectors,
        )
        self.runtime = await assemble(self.config, self.home, self.clock, wanted, self._closing)
        await self._run(self.runtime)

    async def _run(self, runtime: Runtime) -> None:
        """Every part started, each one's stop kept for the shutdown."""
        closing = self._closing
        if runtime.fleet is not None:  # leases taken and their calls swept before any turn
            await runtime.fleet.start()
            closing.push_async_callback(runtime.fleet.stop)
        await runtime.crew.start()
        closing.push_async_callback(runtime.crew.stop, SHUTDOWN_GRACE_S)
        self._background(runtime.scheduler.run, name="scheduler")
        self._background(
            lambda: runtime.services.burn.watch(runtime.rows.publish), name="forecasts"
        )
        if runtime.notifier is not None:
            runtime.notifier.start(self.bus, await runtime.rows.snapshot())
            closing.push_async_callback(runtime.notifier.aclose)
        closing.callback(self.bus.close)
        await self._listen(runtime)
        if runtime.gateway is not None:
            await self._serve_gateway(runtime)

    def _background(self, work: Callable[[], Coroutine[Any, Any, None]], *, name: str) -> None:
        """A task for the plane's life, cancelled at the shutdown; kept
        running (`_kept_running`) if it fails."""
        task = asyncio.create_task(_kept_running(work, name), name=name)

        async def cancel() -> None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

        self._closing.push_async_callback(cancel)

    async def _listen(self, runtime: Runtime) -> None:
        listener = Listener(
            runtime.api.handle,
            runtime.rows.snapshot,
            self.bus,
            _own_version(),
            self.home.make_token(),
        )
        self._closing.push_async_callback(listener.close)
        await listener.listen_unix(self.home.socket)
        if self._tcp is not None:
            self.tcp_port = await listener.listen_tcp(*self._tcp)
        if self._lock is not None:
            say_state(self._lock.fileno(), "running")

    async def _serve_gateway(self, runtime: Runtime) -> None:
        """The gateway's listener (`plane.daemon.http`): its calls in flight
        finish before it closes."""
        from plane.daemon.http import HttpListener
        from plane.daemon.metrics import Metrics

        assert runtime.gateway is not None and self._http is not None
        approvals = runtime.approvals
        self._http_listener = listener = HttpListener(
            runtime.gateway,
            SHUTDOWN_GRACE_S,
            metrics=Metrics(
                runtime.rows.snapshot,
                runtime.db,
                tags={tag: t.limit_usd for tag, t in self.config.tags.items()},
            ).scrape,
            token=self.home.make_token(),
            approve=None if approvals is None else approvals.handle,
        )

        async def close() -> None:
            self.home.say_gateway(None)
            await listener.close()

        self._closing.push_async_callback(close)
        self.http_port = await listener.listen(*self._http)
        self.home.say_gateway(self.gateway_url())

    async def serve(self) -> None:
        await self.startup()
        try:
            await self.stop_event.wait()
        finally:
            self.stand_model_down()
            await self.shutdown()

    def signalled(self) -> None:
        """SIGINT or SIGTERM: the plane stops. Its embedded model, which a
        signal to the plane's group ends too, stands down at once: a plane
        that is stopping never says it restarts its model, nor restarts it."""
        self.stand_model_down()
        self.stop_event.set()

    def stand_model_down(self) -> None:
        """From now on the embedded model is not restarted when it exits."""
        if self.runtime is not None and (model := self.runtime.providers.model) is not None:
            model.supervisor.stand_down()

    async def shutdown(self) -> None:
        """Everything opened, closed in the reverse order; twice is once."""
        if self._lock is not None:  # until the lock is let go, `plane status` says "stopping"
            say_state(self._lock.fileno(), "stopping")
        await self._closing.aclose()

    def _unlock(self) -> None:
        """The socket and the lock go last: not another plane's socket, when
        this one never started, and not the next plane's, shut down twice."""
        if self._lock is None:
            return
        # A directory there is not this plane's socket (its start said so).
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            self.home.socket.unlink()
        self._lock.close()
        self._lock = None


def _lock(home: Home) -> IO[str]:
    """One plane per home: an exclusive lock held for the plane's life, in a
    file that says what the plane is doing (see `Home.state`)."""
    # Not O_APPEND: the state is written at offset 0 (Linux's pwrite appends under O_APPEND).
    handle = open(os.open(home.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600), "r+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        stopping = handle.read().strip() == "stopping"
        handle.close()
        if stopping:
            raise AlreadyRunning(
                f"The plane in {home.root} is still stopping; `plane stop` waits until it has."
            ) from None
        raise AlreadyRunning(
            f"A plane is already running in {home.root}; `plane stop` stops it."
        ) from None
    handle.truncate(0)
    say_state(handle.fileno(), "starting")
    return handle


@functools.cache
def _own_version() -> str:
    """The version a client's hello is told, read once a process: reading it
    parses the installed package's metadata (~3 ms), and a process that
    starts planes again and again (the tests) would parse it each time."""
    return version("plane")
