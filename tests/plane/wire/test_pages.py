"""A list too long for one frame goes as its head and its rows in parts
(`plane.wire.pages`), and every reader gets the whole frame back: THE client,
`plane status`'s plain-JSON ask, a subscriber to the day rolling over. No
line is longer than a reader takes, whatever the fleet's size."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from plane.wire import pages
from plane.wire import protocol as p
from plane.wire.once import ROW_DEFAULTS, ask
from tests.tui.factories import agent, message, snapshot

TRICKY = 'q"uo\\te "agents":[] "messages":[] "entries":[] "top":[] é ✓ \n'
"""A value holding every list's key as it is written, quotes and escapes:
the head's list is found where it is, never in a value."""


def frames() -> list[p.Frame]:
    """A frame of every kind that carries a list sent in parts when long."""
    rows = [
        agent(f"agent-{n:04d}", spend=f"0.{n:04d}", role=TRICKY if n % 7 == 0 else "")
        for n in range(600)
    ]
    day = date(2026, 11, 29)
    at = datetime(2026, 11, 29, 12, tzinfo=UTC)
    entries = [
        p.LedgerEntry(
            id=n, agent=TRICKY, day=day, at=at, provider="p", model="m", usage=p.Usage(),
            cost_usd=Decimal("0.01"), price_source="table", status="settled",
        )
        for n in range(1, 400)
    ]  # fmt: skip
    said = [message(TRICKY, "agent", TRICKY * 3) for _ in range(300)]
    points = [p.SpendPoint(label=f"{TRICKY}{n}", spent_usd=Decimal(n)) for n in range(500)]
    return [
        p.SnapshotReply(id=3, snapshot=snapshot(*rows, models=[TRICKY])),
        p.DayRolled(snapshot=snapshot(*rows)),
        p.LedgerReply(id=4, day=day, entries=entries),
        p.HistoryReply(id=5, agent=TRICKY, messages=said),
        p.SpendHistoryReply(
            id=6, day=day, agent=TRICKY, hours=points[:24], days=points[:30], top=points
        ),
    ]


def read(data: bytes) -> list[p.Frame]:
    """Every frame the lines make, as THE client joins them."""
    joining = pages.Joining()
    whole = []
    for line in data.splitlines(keepends=True):
        frame = joining.take(p.decode_server_frame(line))
        if frame is not None:
            whole.append(frame)
    return whole


@pytest.mark.parametrize("frame", frames(), ids=lambda f: f.type)
def test_a_long_list_goes_in_parts_each_under_the_page_and_comes_back_whole(
    frame: p.Frame, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pages, "PAGE_BYTES", 8 * 1024)
    data = pages.lines(frame)
    lines = data.splitlines()
    assert len(lines) > 3, "sent in parts"
    assert json.loads(lines[0])["parts"] == len(lines) - 1
    assert max(len(line) for line in lines[1:]) < 8 * 1024 + 200
    assert read(data) == [frame]


@pytest.mark.parametrize("frame", frames(), ids=lambda f: f.type)
def test_a_list_that_fits_is_one_frame_as_before(frame: p.Frame) -> None:
    data = pages.lines(frame)
    assert data.count(b"\n") == 1
    assert p.decode_server_frame(data) == frame
    assert json.loads(data)["parts"] == 0


def test_a_row_travels_without_its_defaults_and_is_read_with_them() -> None:
    row = agent("quiet", limit=None)
    assert json.loads(row.line) == {"name": "quiet", "model": "smollm2-135m", "provider": "local"}
    assert p.AgentState.model_validate_json(row.line) == row


def test_plane_status_fills_a_row_s_left_out_fields_as_the_protocol_does() -> None:
    full = json.loads(p.AgentState(name="a", model="m", provider="x").model_dump_json())
    assert {k: v for k, v in full.items() if k not in ("name", "model", "provider")} == (
        ROW_DEFAULTS
    )


def test_a_part_of_no_frame_or_of_another_list_is_a_bad_frame() -> None:
    joining = pages.Joining()
    with pytest.raises(p.BadFrame, match="follows no frame"):
        joining.take(p.AgentRows(id=3, rows=[]))
    head = p.LedgerReply(id=3, day=date(2026, 11, 29), entries=[], parts=2)
    assert joining.take(head) is None
    with pytest.raises(p.BadFrame, match="another list"):
        joining.take(p.AgentRows(id=3, rows=[]))


# ── over the socket ──────────────────────────────────────────────────────


FLEET = """
defaults:
  limitUsd: 1
  provider: scripted
  model: scripted-model
providers:
  scripted:
    kind: openai-compatible
    base_url: {base_url}
    models: [scripted-model]
    max_retries: 0
pricing:
  scripted-model: {input: 1000, cached_input: 100, output: 2000}
agents:
"""


def fleet(agents: int) -> str:
    return FLEET + "".join(f"  agent-{n:05d}: {{}}\n" for n in range(agents))


async def test_the_client_and_plane_status_read_every_row_of_a_snapshot_in_parts(
    start_plane: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pages, "PAGE_BYTES", 4 * 1024)
    plane = await start_plane(fleet(300))
    names = [f"agent-{n:05d}" for n in range(300)]
    told = await (await plane.client()).request(p.Status())
    assert [row.name for row in told.snapshot.agents] == names
    assert told.parts == 0, "joined before the caller reads it"
    asked = await asyncio.to_thread(ask, plane.home.socket, {"type": "status"})
    assert [row["name"] for row in asked["snapshot"]["agents"]] == names


async def test_a_new_day_s_snapshot_reaches_a_subscriber_whole(
    start_plane: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pages, "PAGE_BYTES", 4 * 1024)
    plane = await start_plane(fleet(300))
    client = await plane.client()
    await client.request(p.Subscribe())
    events = client.events()
    await plane.clock.advance(timedelta(hours=12))
    while not isinstance(event := await anext(events), p.DayRolled):
        pass
    assert len(event.snapshot.agents) == 300
    assert event.snapshot.day == date(2026, 11, 30)


async def test_a_snapshot_over_the_frame_limit_reaches_the_client_and_plane_status(
    start_plane: Any,
) -> None:
    """300 agents with a 4,000-character role each: 1.2 MB of rows, over the
    1 MiB a reader takes in one line (each reader refused it as one frame)."""
    role = "Reads the build logs and says what failed. " * 93
    text = FLEET + "".join(f"  agent-{n:05d}: {{role: {role!r}}}\n" for n in range(300))
    plane = await start_plane(text)
    told = await (await plane.client()).request(p.Status())
    assert len(told.snapshot.agents) == 300
    assert {row.role for row in told.snapshot.agents} == {role}
    asked = await asyncio.to_thread(ask, plane.home.socket, {"type": "status"})
    assert len(asked["snapshot"]["agents"]) == 300
