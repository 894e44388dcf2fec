"""The plane's runtime, built once: every part made in order, and given at
construction every collaborator it needs — as uvicorn's `Config.load()`
builds the app before `Server(config)` runs it. `Plane` starts, serves and
stops what this returns; nothing is assigned to a part after it is made.

The order is the layers', bottom up: the store, the ledger and the other
parts below the agents (`Services`, frozen), then the agents. Two parts that
need each other meet in a small object both receive, built first: the
scheduler wakes the crew's workers and the workers book with the scheduler,
so both are given `Workers`, which the crew fills; the fleet wakes through
it too. What the agents tell above them (the alerts, a refused ask, a
spike) is made before them and handed down as a narrow callable.

What is opened is closed by `closing` (the plane's exit stack), in the
reverse order: a build that fails half-way closes exactly what it opened.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from plane.agents.after_turn import AfterTurn, tell_cut_turns
from plane.agents.crew import Crew
from plane.agents.guard_book import GuardBook
from plane.agents.lifecycle import Lifecycle
from plane.agents.roster import Roster
from plane.agents.rows import Rows
from plane.agents.scheduler import Scheduler
from plane.agents.scout import Scout
from plane.agents.services import Ownership, Services
from plane.agents.toolbox import Tooling
from plane.agents.workers import Workers
from plane.clock import Clock, SystemClock
from plane.config import Config
from plane.daemon.alert_folds import CeilingsAbove, Claims
from plane.daemon.alerts import Notifier
from plane.daemon.api import Api
from plane.daemon.events import EventBus
from plane.daemon.providers import Providers
from plane.economy.compress.refs import RefStore
from plane.errors import NoSuchAgent
from plane.history.conversation import Conversation
from plane.history.transcript import Transcript
from plane.home import Home
from plane.money.burn import Burn
from plane.money.ceilings import Ceilings
from plane.money.gate import Gate
from plane.money.ledger import Ledger
from plane.money.pricing import Pricer
from plane.money.savings import Savings
from plane.providers.connections import Connect
from plane.providers.pool import missing_keys, models_offered
from plane.store import is_postgres, open_store
from plane.store.engine import Database
from plane.store.sqlite import refusal
from plane.wire.protocol import Event, StoreChanged

if TYPE_CHECKING:  # loaded only when used: psycopg with a PostgreSQL store, aiohttp with --http
    from plane.daemon.approvals import Approvals
    from plane.daemon.elsewhere import Said
    from plane.daemon.fleet import Fleet
    from plane.daemon.interrupts import Interrupts
    from plane.gateway.forward import Gateway

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Runtime:
    """Every part of a plane, built and wired; `Plane` starts and stops them."""

    services: Services
    db: Database
    providers: Providers
    workers: Workers
    rows: Rows
    scheduler: Scheduler
    crew: Crew
    api: Api
    fleet: Fleet | None
    """This plane's part in a fleet sharing a PostgreSQL store."""
    notifier: Notifier | None
    """The alerts, when agents.yaml has a `notify:` block."""
    approvals: Approvals | None
    """One-tap approval, when the alerts offer it and `--http` answers the links."""
    gateway: Gateway | None
    """The clients' LLM APIs, with `--http`."""


@dataclass(frozen=True)
class Wanted:
    """What the plane was asked to run, besides agents.yaml."""

    bus: EventBus
    stop: Callable[[], None]
    """Asks the plane to stop (the `Stop` request)."""
    http: tuple[str, int] | None = None
    """Where the gateway is to listen (`--http`)."""
    http_port: Callable[[], int | None] = lambda: None
    """The gateway's port once it listens (an approval link points there)."""
    connectors: Mapping[str, Connect] | None = None
    """How each provider connects (tests give a scripted one)."""


async def assemble(
    config: Config,
    home: Home,
    clock: Clock,
    wanted: Wanted,
    closing: contextlib.AsyncExitStack,
) -> Runtime:
    """The store opened, the parts below the agents loaded, then the agents
    and what serves them: built, not started."""
    # PLANE_STORE, else agents.yaml's `store:`, else the SQLite file in the home.
    store = os.environ.get("PLANE_STORE") or config.store
    shared = is_postgres(store)  # several planes may share it
    db = await open_store(store, home.db, changed=_store_changes(wanted.bus) if shared else None)
    closing.push_async_callback(db.close)
    providers = Providers(config, wanted.connectors)
    closing.push_async_callback(providers.aclose)  # the embedded model stopped, once started
    said = _said(wanted.bus) if shared else None  # what this plane tells, remembered
    emit = wanted.bus.emit if said is None else said.emit
    services = await _below_the_agents(
        config, home, clock, emit, db, providers, closing, shared=shared
    )
    key = await _approvals_key(services, db, wanted)
    return _agents(services, db, providers, wanted, closing, said, key)


async def _below_the_agents(
    config: Config,
    home: Home,
    clock: Clock,
    emit: Callable[[Event], None],
    db: Database,
    providers: Providers,
    closing: contextlib.AsyncExitStack,
    *,
    shared: bool,
) -> Services:
    """The ledger (what a stop cut, told), the roster, the ceilings, the
    providers and the rest below the agents, loaded."""
    name = _plane_name(home) if shared else None
    if shared and isinstance(clock, SystemClock):
        clock = _database_clock()  # the day is the database's
    burn = Burn(clock, config.burn)
    ledger = Ledger(
        db, clock, charged=burn.charged, plane=name, lease_margin_ms=_lease_margin(shared)
    )
    conversation = Conversation(db, clock, shared=shared)
    if not shared:  # with several planes, the fleet sweeps what a stop cut
        await _recover(ledger, conversation)
    else:
        await ledger.check_sums()
    await burn.load(db)  # every agent's pace, across the restart
    roster = Roster(
        config, db, home, clock, offered=models_offered(config), keyless=missing_keys(config)
    )
    await roster.load()
    guards = GuardBook(db, shared=shared)
    await guards.load(roster.names(), clock.now())
    closing.push_async_callback(guards.flush)  # after the agents stop, before the store closes
    ceilings = Ceilings(db, clock, ledger.day, tell=_tell_ceilings(name, db))
    groups = {name: (g.limit_usd, frozenset(g.agents)) for name, g in config.groups.items()}
    from_file = {spec.name: spec.ceiling_from_file for spec in roster}
    await ceilings.load(from_file, config.fleet.limit_usd, groups)
    pricer = Pricer(config.pricing)
    refs = _refs(config, home, clock)
    if refs is not None:
        closing.callback(refs.close)
    return Services(
        config=config,
        home=home,
        clock=clock,
        ledger=ledger,
        gate=Gate(ledger, ceilings),
        conversation=conversation,
        transcript=Transcript(db, only_writer=not shared),
        roster=roster,
        emit=emit,
        pricer=pricer,
        providers=await providers.build(roster),
        refs=refs,
        burn=burn,
        savings=Savings(db, clock, pricer),
        ownership=_ownership(name, db),
        guards=guards,
    )


def _agents(
    services: Services,
    db: Database,
    providers: Providers,
    wanted: Wanted,
    closing: contextlib.AsyncExitStack,
    said: Said | None,
    approvals_key: bytes | None,
) -> Runtime:
    """The agents on the parts below them, and what serves them (`said`:
    what this plane of a fleet tells, remembered; `approvals_key`: what the
    alerts' links are signed with, None when they offer none)."""
    config, clock = services.config, services.clock
    shared = services.ownership.plane is not None
    workers = Workers(services.ownership)
    rows = Rows(services, workers, wanted.bus.watched)
    closing.push_async_callback(rows.aclose)
    approvals = _approvals(services, rows, workers, db, wanted, approvals_key)
    notifier = None
    if config.notify is not None:  # alerts: plane.daemon.alerts
        offer = approvals.offer if approvals else None
        runs_here, claimed, claims = _fleet_alerts(services, db)
        notifier = Notifier(
            config.notify,
            clock,
            offer=offer,
            above=CeilingsAbove(services),
            runs_here=runs_here,
            claims=claims,
            claimed=claimed,
            today=services.ledger.day,
        )
    scheduler = Scheduler(db, clock, wake=workers.wake, only_writer=not shared)
    after_turn = AfterTurn(
        services, spiked=notifier.spiked if notifier else None, priced=rows.priced
    )
    tooling = Tooling(
        services,
        scheduler.book,
        scout=Scout(workers, clock, services.ownership),
        refused_ask=notifier.refused_ask if notifier else None,
        priced=rows.priced,
    )
    looped = notifier.looped if notifier else None
    crew = Crew(services, scheduler, workers, rows, after_turn, tooling, looped)
    interrupts = _interrupts(services, db, workers) if shared else None
    if interrupts is not None:
        closing.push_async_callback(interrupts.aclose)
    api = Api(
        crew=crew,
        rows=rows,
        roster=services.roster,
        conversation=services.conversation,
        ledger=services.ledger,
        clock=clock,
        provider_ready=providers.ready,
        stop=wanted.stop,
        lifecycle=Lifecycle(
            services, crew, rows, scheduler, db, interrupts.ask if interrupts else None
        ),
        db=db,
    )
    return Runtime(
        services=services,
        db=db,
        providers=providers,
        workers=workers,
        rows=rows,
        scheduler=scheduler,
        crew=crew,
        api=api,
        fleet=(
            _fleet(services, db, crew, rows, said, interrupts)
            if said is not None and interrupts is not None
            else None
        ),
        notifier=notifier,
        approvals=approvals,
        gateway=_gateway(
            services, db, providers, workers, rows, after_turn, wanted, closing, notifier
        ),
    )


# ── the parts that depend on what was asked for ──────────────────────────────


def _store_changes(bus: EventBus) -> Callable[[datetime | None], None]:
    """Every client is told when the shared store goes away and comes back
    (told from the writer's thread as from the loop)."""
    loop = asyncio.get_running_loop()

    def changed(since: datetime | None) -> None:
        loop.call_soon_threadsafe(bus.emit, StoreChanged(unreachable_since=since))

    return changed


async def _recover(ledger: Ledger, conversation: Conversation) -> None:
    """Calls a stop left in flight, counted at their estimates and told."""
    if cut := await ledger.recover(tell=functools.partial(tell_cut_turns, conversation)):
        calls = sum(c.calls for c in cut.values())
        log.warning(
            "%s in flight when the plane stopped; kept at estimate",
            "1 call was" if calls == 1 else f"{calls} calls were",
        )


def _refs(config: Config, home: Home, clock: Clock) -> RefStore | None:
    """Where what compression and compaction take out of a prompt is kept, for
    `retrieve` and `plane retrieve`; None when neither is on."""
    compression = config.compression
    if not compression.enabled and not config.session.compact_enabled:
        return None
    try:
        return RefStore(home.refs_db, compression.ttl_seconds, clock)
    except sqlite3.Error as exc:
        aside = "start an empty one (what compression removed so far is then gone)"
        raise refusal(home.refs_db, exc, aside=aside) from None


async def _approvals_key(services: Services, db: Database, wanted: Wanted) -> bytes | None:
    """What the alerts' links are signed with, when they offer any: the
    home's key, or with planes sharing the store, the fleet's (the first
    plane's), so any plane follows a link any made."""
    notify = services.config.notify
    if notify is None or not notify.approve or wanted.http is None:
        return None
    key = services.home.make_approvals_key()
    if services.ownership.plane is None:
        return key
    from plane.money.approvals import fleet_key

    return await fleet_key(db, key)


def _approvals(
    services: Services,
    rows: Rows,
    workers: Workers,
    db: Database,
    wanted: Wanted,
    key: bytes | None,
) -> Approvals | None:
    """One-tap approval (plane.daemon.approvals), when alerts offer it and
    the `--http` listener is there to answer the links (`key`: what they
    are signed with; None: they are not offered)."""
    notify = services.config.notify
    if key is None or notify is None or wanted.http is None:
        return None
    from plane.daemon.approvals import Approvals
    from plane.money.approvals import Signer

    host = wanted.http[0]
    host = f"[{host}]" if ":" in host else host

    def base_url() -> str | None:
        port = wanted.http_port()
        return None if port is None else f"http://{host}:{port}"

    signer = Signer(key)
    return Approvals(services, rows, workers, db, signer, notify, base_url)


def _gateway(
    services: Services,
    db: Database,
    providers: Providers,
    workers: Workers,
    rows: Rows,
    after_turn: AfterTurn,
    wanted: Wanted,
    closing: contextlib.AsyncExitStack,
    notifier: Notifier | None,
) -> Gateway | None:
    """The clients' LLM APIs (`--http`); their listener is the plane's to start.
    A call its tag's ceiling refuses is alerted (`notifier`, when there is one)."""
    if wanted.http is None:
        return None
    from plane.gateway.forward import Gateway
    from plane.gateway.keys import Keys

    gateway = Gateway(
        services,
        workers,
        Keys(services.home.gateway_keys),
        db,
        changed=rows.changed,
        spend_notices=after_turn.spend_notices,
        embedded=providers.embedded_address,
        tag_full=notifier.tag_full if notifier else None,
    )
    closing.push_async_callback(gateway.aclose)
    return gateway


# ── several planes on one PostgreSQL store (psycopg loaded only then) ───────


def _plane_name(home: Home) -> str:
    from plane.daemon.fleet import plane_name

    return plane_name(str(home.root))


def _database_clock() -> Clock:
    from plane.daemon.fleet import DatabaseClock

    return DatabaseClock()


def _lease_margin(shared: bool) -> int:
    if not shared:
        return 0
    from plane.daemon.fleet import lease_margin_ms

    return lease_margin_ms()


def _fleet_alerts(
    services: Services, db: Database
) -> tuple[Callable[[str], bool], Callable[[str], bool], Claims | None]:
    """With planes sharing the store, which alerts are this plane's: an
    agent's own, where it runs; a fold's, and the own alerts of an agent no
    plane runs (a gateway agent, `claimed`), where the claim is taken."""
    ownership, roster = services.ownership, services.roster

    def runs_here(agent: str) -> bool:
        return ownership.mine is None or agent in ownership.mine

    def claimed(agent: str) -> bool:
        try:
            return roster.get(agent).gateway is not None
        except NoSuchAgent:  # deleted meanwhile
            return False

    if ownership.plane is None:
        return runs_here, claimed, None
    from plane.daemon.alert_claims import StoreClaims

    return runs_here, claimed, StoreClaims(db, ownership.plane)


def _ownership(name: str | None, db: Database) -> Ownership:
    """Which plane runs each agent: alone, this one; in a fleet, the leases
    say, and an agent's owner is told of its work through the store."""
    if name is None:
        return Ownership()
    from plane.daemon.fleet import tell_owner
    from plane.store.postgres import PostgresDatabase

    assert isinstance(db, PostgresDatabase)
    return Ownership(name, notify=functools.partial(tell_owner, db))


def _tell_ceilings(name: str | None, db: Database) -> Callable[[], None] | None:
    """How the other planes of a fleet are told that this one changed a
    ceiling, for them to read the ceilings again at once (alone: no one)."""
    if name is None:
        return None
    from plane.daemon.fleet import tell_ceilings
    from plane.store.postgres import PostgresDatabase

    assert isinstance(db, PostgresDatabase)
    return functools.partial(tell_ceilings, db, name)


def _said(bus: EventBus) -> Said:
    from plane.daemon.elsewhere import Said

    return Said(bus.emit)


def _interrupts(services: Services, db: Database, workers: Workers) -> Interrupts:
    """On a plane of a fleet: the operator's interrupt of a turn another plane runs."""
    from plane.daemon.interrupts import Interrupts
    from plane.store.postgres import PostgresDatabase

    assert isinstance(db, PostgresDatabase)
    return Interrupts(db, services.ownership.owns, workers.interrupt)


def _fleet(
    services: Services,
    db: Database,
    crew: Crew,
    rows: Rows,
    said: Said,
    interrupts: Interrupts,
) -> Fleet:
    from plane.daemon.elsewhere import Elsewhere
    from plane.daemon.fleet import DatabaseClock, Fleet
    from plane.store.postgres import PostgresDatabase

    assert isinstance(db, PostgresDatabase)
    clock = services.clock
    roster = services.roster
    workers = crew.workers
    return Fleet(
        db,
        lambda: [spec.name for spec in roster if spec.gateway is None],
        services.ledger,
        services.gate.ceilings,
        services.conversation,
        services.ownership,
        clock if isinstance(clock, DatabaseClock) else None,
        wake=workers.wake,
        told=workers.told,
        heard=interrupts.heard,
        idle=workers.idle,
        show=rows.told,
        behind=rows.behind,
        ceilings_changed=rows.ceilings_changed,
        emit=services.emit,
        elsewhere=Elsewhere(services.conversation, said, roster.names),
        guards=services.guards,
        workers=workers,
        work=crew.with_work,
    )
