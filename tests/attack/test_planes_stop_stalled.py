"""`plane stop` on a plane of a fleet whose link to PostgreSQL stalls (the
proxy stops forwarding without closing, as a half-open partition does):
the plane stops well inside the bound `plane stop` waits for, instead of
waiting on the dead link — the leases it could not let go run out by
themselves, and another plane takes them then."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import pytest

from plane.cli.daemon import STOP_TIMEOUT_S
from tests.attack.test_planes_store_away import CONFIG
from tests.support.fixtures_plane import launch
from tests.support.tcp_proxy import TcpProxy, through

pytestmark = pytest.mark.slow  # the release of the leases is waited for: ~3 s


async def test_an_idle_plane_stops_well_inside_plane_stops_bound_on_a_stalled_link(
    tmp_path, scripted_llm, postgres_url, monkeypatch, caplog
):
    with TcpProxy(int(urlsplit(postgres_url).port or 5432)) as proxy:
        monkeypatch.setenv("PLANE_STORE", through(postgres_url, proxy.port))
        plane = await launch(tmp_path, scripted_llm, CONFIG)
        await plane.client()
        proxy.stall()
        stopping = asyncio.ensure_future(plane.stop())
        try:
            done, _ = await asyncio.wait({stopping}, timeout=STOP_TIMEOUT_S / 2)
            assert done, f"still stopping after {STOP_TIMEOUT_S / 2:g}s on a stalled link"
        finally:
            proxy.resume()
            await stopping
    said = [r.getMessage() for r in caplog.records if r.name == "plane.daemon.fleet"]
    assert any(line.startswith("the leases were not let go (") for line in said), said
