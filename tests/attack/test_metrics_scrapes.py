"""`/metrics`, attacked by its own scrapers: a scrape must not cost the calls
it measures. Scrapers that arrive together are served one reading of the
ledger's sums; a reading is served again for a few seconds; a scraper that
loops waits its turn. (What looping scrapers do to gateway calls' latency is
timed by bench/metrics_scrapes.py, which prints the ratio.)"""

from __future__ import annotations

import asyncio

import pytest

from plane.daemon.metrics import FRESH_S, SPARE, Metrics
from tests.support.fixtures_gateway import StartGateway
from tests.support.local_http import local_client


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_scrapes_that_arrive_together_are_served_one_reading_of_the_sums(
    start_gateway: StartGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ledger is read aside (`Database.read_aside`) as often for 16
    scrapes at once as for one scrape alone."""
    gw = await start_gateway()
    db = gw.runtime.db
    sums = 0
    read_aside = db.read_aside

    async def counted(fn, *args):
        nonlocal sums
        sums += 1
        return await read_aside(fn, *args)

    monkeypatch.setattr(db, "read_aside", counted)
    await Metrics(gw.runtime.rows.snapshot, db).scrape()
    one_reading, sums = sums, 0
    assert one_reading > 0, "a reading sums the ledger aside"
    headers = {"Authorization": f"Bearer {gw.home.token.read_text()}"}
    async with local_client() as client:
        answers = await asyncio.gather(
            *(client.get(f"{gw.url}/metrics", headers=headers) for _ in range(16))
        )
    assert [a.status_code for a in answers] == [200] * 16
    assert len({a.text for a in answers}) == 1
    readings = sums / one_reading
    print(f"\n/metrics: 16 scrapes at once, {readings:g} reading(s) of the ledger's sums")
    assert sums == one_reading


async def test_a_reading_is_served_for_a_few_seconds_then_taken_again(start_plane) -> None:
    plane = await start_plane()
    clock = Clock()
    scrape = Metrics(plane.rows.snapshot, plane.runtime.db, monotonic=clock, every_s=0)
    first = await scrape.scrape()
    assert b'plane_agent_ceiling_usd{agent="demo"} 1.0' in first
    await plane.send("demo", "/limit 2")
    clock.now += FRESH_S - 0.1
    assert await scrape.scrape() is first  # the same reading: nothing was summed again
    assert scrape.readings == 1
    clock.now += 0.2
    again = await scrape.scrape()
    assert b'plane_agent_ceiling_usd{agent="demo"} 2.0' in again
    assert scrape.readings == 2


async def test_a_reading_that_takes_long_is_served_the_longer(start_plane) -> None:
    """On a ledger whose sums take 2 s, a reading is served for 20 s: taking
    readings never fills more than a tenth of the plane's time."""
    plane = await start_plane()
    clock = Clock()

    async def slow_snapshot():
        clock.now += 2.0
        return await plane.rows.snapshot()

    scrape = Metrics(slow_snapshot, plane.runtime.db, monotonic=clock, every_s=0)
    await scrape.scrape()
    clock.now += SPARE * 2.0 - 0.1
    await scrape.scrape()
    assert scrape.readings == 1
    clock.now += 0.2
    await scrape.scrape()
    assert scrape.readings == 2


async def test_a_scraper_that_loops_waits_its_turn(start_plane) -> None:
    plane = await start_plane()
    clock = Clock()
    scrape = Metrics(plane.rows.snapshot, plane.runtime.db, monotonic=clock, every_s=30)
    await scrape.scrape()
    with pytest.raises(TimeoutError):  # the next is answered 30 s after the last
        await asyncio.wait_for(scrape.scrape(), 0.2)
    assert scrape.readings == 1
