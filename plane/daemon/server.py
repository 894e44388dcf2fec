"""The plane: start up, serve until told to stop, shut down.

Like uvicorn's server: `startup()` opens the store, recovers what a crash
left, refuses to go on if an agent's provider has no API key, starts the
embedded model if an agent uses it, builds the providers and starts
listening; `serve()` waits on a stop event (signal handlers only set it);
`shutdown()` stops accepting, lets turns in flight finish within a timeout,
cancels the rest and closes everything. A start-up that fails closes what
it opened, so a refusal leaves nothing running.

Lifecycle only: what each request asks is `plane.daemon.api`'s.

The embedded model is also started later, by the first agent created on it
from the keyboard: it is offered to new agents (it needs no key), so an
agent put on it has to be able to take turns.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import logging
import os
import sqlite3
from collections.abc import Mapping
from datetime import datetime
from importlib.metadata import version
from typing import IO, TYPE_CHECKING

from plane.agents.crew import Crew
from plane.agents.lifecycle import Lifecycle
from plane.agents.roster import Roster
from plane.agents.scheduler import Scheduler
from plane.agents.services import Services
from plane.agents.worker import tell_cut_turns
from plane.clock import Clock, SystemClock
from plane.config import EMBEDDED, EMBEDDED_MODEL, Config, NotifyConfig
from plane.daemon.alerts import Notifier, OfferFor
from plane.daemon.api import Api
from plane.daemon.events import EventBus
from plane.daemon.listener import Listener
from plane.economy.compress.refs import RefStore
from plane.errors import PlaneError, StoreError, StoreFault
from plane.history.conversation import Conversation
from plane.history.transcript import Transcript
from plane.home import Home, say_state
from plane.money.burn import Burn
from plane.money.ceilings import Ceilings
from plane.money.gate import Gate
from plane.money.ledger import Ledger
from plane.money.pricing import Pricer
from plane.money.savings import Savings
from plane.providers.base import Provider
from plane.providers.connections import Connect
from plane.providers.local import EmbeddedModel
from plane.providers.pool import (
    build_providers,
    embedded_providers,
    missing_keys,
    models_offered,
    refuse_missing_keys,
)
from plane.store import is_postgres, open_store
from plane.store.engine import Database
from plane.store.sqlite import refusal
from plane.wire.protocol import StoreChanged

if TYPE_CHECKING:  # loaded only when used: psycopg with a PostgreSQL store, aiohttp with --http
    from plane.daemon.approvals import Approvals
    from plane.daemon.fleet import Fleet
    from plane.daemon.http import HttpListener

log = logging.getLogger(__name__)

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
        self._http_listener: HttpListener | None = None
        self.http_port: int | None = None
        """The gateway's port (`--http`), once listening."""
        self._connectors = connectors
        self._lock: IO[str] | None = None
        self._db: Database | None = None
        self._fleet: Fleet | None = None
        self._embedded: EmbeddedModel | None = None
        self._embedded_starting = asyncio.Lock()
        """Two agents created on the embedded model at once start it once."""
        self._listener: Listener | None = None
        self._background: list[asyncio.Task[None]] = []
        self._notifier: Notifier | None = None
        self._approve: Approvals | None = None
        self.bus = EventBus()
        """What the clients are told; the agents reach it only through `emit`."""
        self.services: Services
        self.scheduler: Scheduler
        self.crew: Crew
        self.api: Api

    # ── lifecycle ──────────────────────────────────────────────────────────

    async def startup(self) -> None:
        """Start, or close what was opened and raise one `PlaneError` saying
        why: a start that fails leaves no thread, child, socket or lock."""
        try:
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

    def started(self) -> str:
        """The start line: where clients reach the plane, and what it runs."""
        where = str(self.home.socket)
        if self._tcp is not None and self.tcp_port is not None:
            host = self._tcp[0]
            host = f"[{host}]" if ":" in host else host
            where += f" and {host}:{self.tcp_port}"
        where += f" (token in {self.home.token})"
        if (gateway := self.gateway_url()) is not None:
            where += f"; the gateway on {gateway}"
        names = [spec.name for spec in self.services.roster]
        agents = "no agents"
        if names:
            agents = f"{len(names)} agent{'' if len(names) == 1 else 's'} ({', '.join(names)})"
        model = ""
        if self._embedded is not None:
            model = f"; the embedded model ({EMBEDDED_MODEL}) at {self._embedded.base_url}"
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
        # PLANE_STORE, else agents.yaml's `store:`, else the SQLite file in the home.
        store = os.environ.get("PLANE_STORE") or self.config.store
        self._db = db = await open_store(store, self.home.db)
        shared = is_postgres(store)  # several planes may share it
        if shared:
            self._tell_store_changes(db)
        db_clock = None
        if shared and isinstance(self.clock, SystemClock):
            from plane.daemon.fleet import DatabaseClock

            self.clock = db_clock = DatabaseClock()  # the day is the database's
        burn = Burn(self.clock, self.config.burn)
        ledger = Ledger(db, self.clock, charged=burn.charged)
        conversation = Conversation(db, self.clock, shared=shared)
        if shared:
            from plane.daemon.fleet import plane_name

            ledger.plane = plane_name(str(self.home.root))
        elif cut := await ledger.recover(tell=functools.partial(tell_cut_turns, conversation)):
            calls = sum(c.calls for c in cut.values())
            log.warning("%d calls were in flight when the plane stopped; kept at estimate", calls)
        await burn.load(db)  # every agent's pace, across the restart
        roster = Roster(
            self.config,
            db,
            self.home,
            self.clock,
            offered=models_offered(self.config),
            keyless=missing_keys(self.config),
        )
        await roster.load()
        ceilings = Ceilings(db, self.clock)
        await ceilings.load(
            {spec.name: spec.ceiling_from_file for spec in roster},
            self.config.fleet.limit_usd,
            {name: (g.limit_usd, frozenset(g.agents)) for name, g in self.config.groups.items()},
        )
        services = self.services = Services(
            config=self.config,
            home=self.home,
            clock=self.clock,
            ledger=ledger,
            gate=Gate(ledger, ceilings, self.clock),
            conversation=conversation,
            transcript=Transcript(db, only_writer=not shared),
            roster=roster,
            emit=self.bus.emit,
            pricer=Pricer(self.config.pricing),
            providers=await self._providers(roster),
            refs=self._refs(),
            burn=burn,
        )
        services.savings = Savings(db, self.clock, services.pricer)
        gateway_agents = [spec.name for spec in roster if spec.gateway is not None]
        services.client_models.update(await ledger.latest_models(gateway_agents))
        self.scheduler = Scheduler(db, self.clock, wake=self._wake, only_writer=not shared)
        self.crew = crew = Crew(services, self.scheduler)
        self.api = Api(
            crew=crew,
            roster=roster,
            conversation=conversation,
            ledger=ledger,
            clock=self.clock,
            provider_ready=self._provider_ready,
            stop=self.stop_event.set,
            lifecycle=Lifecycle(services, crew, self.scheduler, db),
            db=db,
        )
        crew.start()
        if self.config.notify is not None:  # alerts: plane.daemon.alerts
            self._notifier = Notifier(
                self.config.notify, self.clock, offer=self._approvals(self.config.notify)
            )
            services.refused_ask = self._notifier.refused_ask
            services.spiked = self._notifier.spiked
            self._notifier.start(self.bus, await crew.snapshot())
        if shared and ledger.plane is not None:
            from plane.daemon.fleet import Fleet
            from plane.store.postgres import PostgresDatabase

            assert isinstance(db, PostgresDatabase)
            self._fleet = Fleet(
                db,
                ledger.plane,
                lambda: [spec.name for spec in roster if spec.gateway is None],
                ledger,
                ceilings,
                conversation,
                services.ownership,
                db_clock,
            )
            self._fleet.wake = crew.wake
            self._fleet.idle = lambda agent: agent not in crew.workers or crew.workers[agent].idle
            self._fleet.changed = self._show_owners
            await self._fleet.start()  # leases taken and their calls swept before any turn
        self._background.append(asyncio.create_task(self.scheduler.run()))
        await self._listen()
        if self._http is not None:  # the gateway: plane.daemon.http
            from plane.daemon.http import HttpListener
            from plane.daemon.metrics import Metrics
            from plane.gateway.forward import Gateway
            from plane.gateway.keys import Keys

            gateway = Gateway(
                services,
                Keys(self.home.gateway_keys),
                db,
                publish=crew.publish,
                spend_notices=crew.spend_notices,
                tell_hold=crew.tell_hold,
                embedded=self._embedded_address,
            )
            self._http_listener = HttpListener(
                gateway,
                SHUTDOWN_GRACE_S,
                metrics=Metrics(
                    crew.snapshot,
                    db,
                    tags={tag: t.limit_usd for tag, t in self.config.tags.items()},
                ).scrape,
                token=self.home.make_token(),
                approve=None if self._approve is None else self._approve.handle,
            )
            self.http_port = await self._http_listener.listen(*self._http)
            self.home.say_gateway(self.gateway_url())

    def _approvals(self, notify: NotifyConfig) -> OfferFor | None:
        """One-tap approval (plane.daemon.approvals), when alerts offer it and
        the `--http` listener is there to answer the links."""
        if not notify.approve or self._http is None:
            return None
        from plane.daemon.approvals import Approvals
        from plane.money.approvals import Signer

        assert self._db is not None
        host = self._http[0]
        host = f"[{host}]" if ":" in host else host
        self._approve = Approvals(
            self.services,
            self.crew,
            self._db,
            Signer(self.home.make_approvals_key()),
            notify,
            lambda: None if self.http_port is None else f"http://{host}:{self.http_port}",
        )
        return self._approve.offer

    def _tell_store_changes(self, db: Database) -> None:
        """Every client is told when the shared store goes away and comes
        back (told from the writer's thread as from the loop)."""
        from plane.store.postgres import PostgresDatabase

        assert isinstance(db, PostgresDatabase)
        loop = asyncio.get_running_loop()

        def changed(since: datetime | None) -> None:
            loop.call_soon_threadsafe(self.bus.emit, StoreChanged(unreachable_since=since))

        db.link.changed = changed

    def _show_owners(self, agents: set[str]) -> None:
        """Rows whose owner changed, shown again (the fleet's ticks)."""
        for agent in agents:
            if agent in self.crew.workers:
                self._background.append(asyncio.create_task(self._show(agent)))

    async def _show(self, agent: str) -> None:
        await self.crew.publish(agent)

    def _wake(self, agent: str) -> None:
        """The scheduler's: a booking came due (the crew exists by the time it runs)."""
        self.crew.wake(agent)

    async def serve(self) -> None:
        await self.startup()
        try:
            await self.stop_event.wait()
        finally:
            await self.shutdown()

    async def shutdown(self) -> None:
        if self._lock is not None:  # until the lock is let go, `plane status` says "stopping"
            say_state(self._lock.fileno(), "stopping")
        if self._listener is not None:
            await self._listener.close()
        if self._http_listener is not None:  # calls in flight finish, then the gateway closes
            self.home.say_gateway(None)
            await self._http_listener.close()
            await self._http_listener.gateway.aclose()
            self._http_listener = None
        self.bus.close()
        if self._notifier is not None:
            await self._notifier.aclose()
            self._notifier = None
        if hasattr(self, "crew"):  # a start-up that failed may have none
            await self.crew.stop(SHUTDOWN_GRACE_S)
        if hasattr(self, "services"):
            for provider in self.services.providers.values():
                await provider.aclose()
            if self.services.refs is not None:
                self.services.refs.close()
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self._embedded is not None:
            await self._embedded.stop()
        if self._fleet is not None:  # after the turns: their calls cut are swept by the next owner
            await self._fleet.stop()
            self._fleet = None
        if self._db is not None:
            await self._db.close()
        if self._lock is not None:  # not another plane's socket, when this one never started
            with contextlib.suppress(FileNotFoundError):
                self.home.socket.unlink()
            self._lock.close()
            self._lock = None  # shut down twice, it does not touch the next plane's socket

    async def _providers(self, roster: Roster) -> dict[str, Provider]:
        """Every agent counts as a user of its provider, those created from
        the keyboard too: a key they need that is missing stops the plane
        here, before the embedded model is started."""
        agents = {spec.name: spec.provider for spec in roster}
        refuse_missing_keys(self.config, agents)
        if any(self.config.providers[name].kind == EMBEDDED for name in agents.values()):
            await self._start_embedded()
        return build_providers(
            self.config, embedded=self._embedded, connectors=self._connectors, agents=agents
        )

    def _embedded_address(self) -> tuple[str, str | None] | None:
        """The embedded model's base URL and key, while it runs (the gateway's upstream)."""
        model = self._embedded
        if model is None or not model.base_url:
            return None
        return model.base_url, model.api_key

    async def _start_embedded(self) -> EmbeddedModel:
        if self._embedded is None:
            # One core stays free for the plane, its clients and the shell:
            # llama.cpp's threads spin-wait, and fighting for cores is slower.
            threads = max(1, min(4, (os.cpu_count() or 2) - 1))
            self._embedded = EmbeddedModel(threads=threads)
        await self._embedded.start()
        return self._embedded

    async def _provider_ready(self, provider: str) -> None:
        """A new agent's provider, ready before the agent exists: the
        embedded model, when no agent used it at start-up, starts now. Its
        failure to start is the request's error, and no agent is made."""
        providers = self.services.providers
        if provider in providers or self.config.providers[provider].kind != EMBEDDED:
            return
        async with self._embedded_starting:
            if provider not in providers:
                providers.update(embedded_providers(self.config, await self._start_embedded()))

    def _refs(self) -> RefStore | None:
        compression = self.config.compression
        if not compression.enabled:
            return None
        try:
            return RefStore(self.home.refs_db, compression.ttl_seconds, self.clock)
        except sqlite3.Error as exc:
            aside = "start an empty one (what compression removed so far is then gone)"
            raise refusal(self.home.refs_db, exc, aside=aside) from None

    async def _listen(self) -> None:
        self._listener = Listener(
            self.api.handle,
            self.crew.snapshot,
            self.bus,
            version("plane"),
            self.home.make_token(),
        )
        await self._listener.listen_unix(self.home.socket)
        if self._tcp is not None:
            self.tcp_port = await self._listener.listen_tcp(*self._tcp)
        if self._lock is not None:
            say_state(self._lock.fileno(), "running")


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
