"""`plane ledger --summary --by group|tag|session`: the calls' own columns,
summed exactly, calls with none under `(none)`; the lines add up to the
total."""

import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from plane.clock import ManualClock
from plane.home import Home
from plane.money.budgets import Budget
from plane.money.ledger import Ledger
from plane.store.sqlite import SqliteDatabase
from plane.wire.protocol import Usage
from tests.support.command import plane_cli

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
RESEARCH = Budget("research", None)


@pytest.fixture
async def written(tmp_path):
    home = Home(tmp_path / "home").ensure()
    db = await SqliteDatabase.open(home.db)
    ledger = Ledger(db, ManualClock(NOON))
    calls = [
        ("scout", RESEARCH, None, None, "0.1"),
        ("poet", RESEARCH, "ticket-123", "s-1", "0.2"),
        ("claude", None, "ticket-123", "s-1", "0.3"),
        ("claude", None, None, "s-2", "0.0000004"),
    ]
    for agent, group, tag, session, cost in calls:
        call = await ledger.open_call(
            agent, "p", "m", Decimal("1"), "estimate", group=group,
            tag=Budget(tag, None) if tag else None, session=session,
        )  # fmt: skip
        await ledger.settle(call, Usage(input_tokens=10), Decimal(cost), "table")
    yield home.root
    await db.close()


@pytest.mark.parametrize(
    ("by", "expected"),
    [
        ("group", [("(none)", "0.3000004"), ("research", "0.3")]),
        ("tag", [("ticket-123", "0.5"), ("(none)", "0.1000004")]),
        ("session", [("s-1", "0.5"), ("(none)", "0.1"), ("s-2", "0.0000004")]),
    ],
)
def test_by_group_tag_and_session(written, by, expected):
    out = plane_cli(written, "ledger", "--summary", "--by", by, "--day", "2026-11-29", "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert [(g[by], g["cost_usd"]) for g in summary["groups"]] == expected
    assert summary["total"]["cost_usd"] == "0.6000004"
    text = plane_cli(written, "ledger", "--summary", "--by", by, "--day", "2026-11-29").stdout
    assert f"by {by}: 4 calls, $0.60" in text.splitlines()[0]
