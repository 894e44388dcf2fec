"""An alert's one-tap link, followed on another plane of the fleet: two real
planes on a real PostgreSQL, each with its `--http` listener. The plane that
runs the held agent makes the offer, once, and signs its links; the
operator's tap reaches the other plane (a proxy in front of both, or the
first one stopped since). Before, each plane signed with its own home's key:
the other plane refused the link as forged, and each plane made an offer of
its own for the one hold (two pushes, two offers)."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from plane.daemon import fleet
from plane.wire.protocol import Usage
from tests.support.approving import HTTP, approving, post, rows
from tests.support.fixtures_plane import launch
from tests.support.fleet_members import runs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

LEASE_S = 3.0


async def test_a_link_one_plane_made_raises_the_agent_when_followed_on_another(
    tmp_path: Path, scripted_llm, postgres_url, monkeypatch, receiver
):
    monkeypatch.setenv("PLANE_STORE", postgres_url)
    monkeypatch.setattr(fleet, "LEASE_S", LEASE_S)
    config = approving(receiver)
    a = await launch(tmp_path / "a", scripted_llm, config, http=HTTP)
    b = None
    try:
        await asyncio.wait_for(runs(a, "demo"), 10 * LEASE_S)
        b = await launch(tmp_path / "b", scripted_llm, config, http=HTTP)
        a.llm.reply("All of it.", usage=Usage(input_tokens=1050))  # $1.05 of its $1.00
        await a.turn("demo", "spend")
        await receiver.until_hook("held")
        assert a.runtime.notifier is not None and b.runtime.notifier is not None
        await asyncio.sleep(2 * LEASE_S)  # B shows the row held, at a renewal
        await a.runtime.notifier.drained()
        await b.runtime.notifier.drained()
        holds = [h for h in receiver.hooks() if h["event"] == "held"]
        assert len(holds) == 1, "one push, one offer, for one hold"
        assert len(await rows(a, "SELECT nonce FROM offers")) == 1
        [link] = [x["url"] for x in holds[0]["actions"] if x["label"] == "+$0.40 today"]
        other = b if urlsplit(link).netloc in (a.plane.gateway_url() or "") else a
        elsewhere = (other.plane.gateway_url() or "") + link[link.index("/approve") :]
        tapped = await post(elsewhere)
        assert tapped.status_code == 200, tapped.text
        assert other.services.gate.ceilings.of("demo") == Decimal("1.40")
    finally:
        scripted_llm.hang_up()
        if b is not None:
            await b.stop()
        await a.stop()
