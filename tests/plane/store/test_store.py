"""Choosing the store, and what the PostgreSQL engine adds to the one
interface: the dialect translated in one place, group commit kept, planes
that start together migrating once, and a store that cannot be used refused
with one sentence."""

import asyncio
import socket
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from plane.clock import ManualClock
from plane.config import parse_config
from plane.errors import ConfigError, StoreError
from plane.money.ledger import Ledger
from plane.store import open_store
from plane.store.migrations import MIGRATIONS
from plane.store.postgres import PostgresDatabase
from plane.store.postgres_dialect import translate
from plane.wire.protocol import Usage
from tests.support.command import plane_cli

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_parameters_are_translated_outside_quotes_only():
    assert translate("SELECT '?', \"a?\" FROM t WHERE a = ? AND b LIKE '10%'") == (
        "SELECT '?', \"a?\" FROM t WHERE a = %s AND b LIKE '10%%'",
        None,
    )


def test_numbered_parameters_send_their_value_each_time_they_appear():
    assert translate("SELECT ?1, ?2 WHERE x = ?1") == ("SELECT %s, %s WHERE x = %s", (0, 1, 0))


async def test_writes_that_arrive_together_share_a_commit(postgres_url):
    db = await PostgresDatabase.connect(postgres_url)
    try:
        ledger = Ledger(db, ManualClock(NOON))
        await ledger.spend_today("agent-0")
        commits = db.counts.commits

        async def call(n: int) -> None:
            call = await ledger.open_call(f"agent-{n}", "p", "m", Decimal("0.02"), "estimate")
            await ledger.settle(call, Usage(input_tokens=10), Decimal("0.01"), "table")

        await asyncio.gather(*(call(n) for n in range(50)))
        assert db.counts.commits - commits < 50, "100 writes, not a commit each"
        assert await ledger.spend_by_agent() == {f"agent-{n}": Decimal("0.01") for n in range(50)}
    finally:
        await db.close()


async def test_planes_that_start_together_migrate_once(bare_postgres_url):
    opened = await asyncio.gather(*(PostgresDatabase.connect(bare_postgres_url) for _ in range(3)))
    try:
        rows = await opened[0].fetchall("SELECT version FROM plane_schema")
        assert [tuple(r) for r in rows] == [(len(MIGRATIONS),)]
    finally:
        for db in opened:
            await db.close()


async def test_a_store_from_a_newer_plane_is_refused(postgres_url):
    db = await PostgresDatabase.connect(postgres_url)
    await db.write(lambda conn: conn.execute("UPDATE plane_schema SET version = 99"))
    await db.close()
    with pytest.raises(StoreError, match=r"from a newer plane \(schema 99, .*upgrade plane"):
        await PostgresDatabase.connect(postgres_url)


async def test_a_store_that_cannot_be_reached_is_one_sentence_without_its_password(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://plane:secret@127.0.0.1:{port}/plane"
    with pytest.raises(StoreError) as refused:
        await open_store(url, tmp_path / "plane.db")
    said = str(refused.value)
    assert said.startswith(f"Cannot use the store at postgresql://plane:…@127.0.0.1:{port}/plane")
    assert "secret" not in said and "\n" not in said


async def test_a_store_that_is_not_a_url_is_refused(tmp_path):
    with pytest.raises(StoreError, match=r"'mysql://x' is not a store the plane can use"):
        await open_store("mysql://x", tmp_path / "plane.db")
    assert not (tmp_path / "plane.db").exists()


def test_agents_yaml_names_a_bad_store_with_its_line():
    with pytest.raises(ConfigError, match=r"store.*is not a postgresql:// URL"):
        parse_config("store: /var/lib/plane.db\n")
    assert parse_config("store: postgresql://h/db\n").store == "postgresql://h/db"


def test_serve_with_a_store_it_cannot_reach_says_one_line_and_exits(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "agents.yaml"
    config.write_text("agents:\n  demo: {}\n")
    store = f"postgresql://plane:pw@127.0.0.1:{port}/plane"
    done = plane_cli(
        tmp_path / "home", "serve", "--config", str(config), env={"PLANE_STORE": store}
    )
    assert done.returncode != 0
    said = [line for line in done.stderr.splitlines() if line.startswith("plane: Cannot use")]
    assert said and said[0].startswith(
        f"plane: Cannot use the store at postgresql://plane:…@127.0.0.1:{port}/plane"
    )
    assert "Traceback" not in done.stderr and "pw@" not in done.stderr
    assert not (tmp_path / "home" / "plane.sock").exists()
