"""A gateway agent whose call was priced at a floor (the upstream answered
with a model that has no known price, so the call was charged as the one
asked for): its row and the title say the rest of its spend is unpriced
(`+$?`, as `/limit` and `plane status` do), and the fleet line's sum of the
day says it as the ledger says the call (`$0.00021 + unpriced`), on a real
plane whose gateway forwards to the scripted upstream."""

from __future__ import annotations

import pytest

from tests.support.fixtures_gateway import GatewayPlane, StartGateway
from tests.support.local_http import local_client
from tests.support.stream_events import chat_reply
from tests.tui.conftest import row_classes
from tests.tui.test_live import SIZE, app_for, row_text, title, until
from tui.app import PlaneApp
from tui.widgets.fleet_line import FleetLine


async def call(gw: GatewayPlane, answered: str) -> None:
    """One call of aider's client for gpt-4o-mini, answered by `answered`."""
    path, heads = gw.calls_as("aider")
    usage = {"prompt_tokens": 1000, "completion_tokens": 100}
    gw.llm.fault(200, body=chat_reply(usage, answered))
    async with local_client(base_url=gw.url, timeout=20) as http:
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
        answer = await http.post(path, json=body, headers=heads)
        assert answer.status_code == 200, answer.text


def fleet_line(app: PlaneApp) -> str:
    return app.main_screen.query_one(FleetLine).render().plain


@pytest.mark.slow
async def test_a_spend_priced_at_a_floor_says_the_rest_is_unpriced(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    app = app_for(gw)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: row_text(app, "aider") == "○ aider")
        await pilot.press("alt+down")
        await until(pilot, lambda: app.main_screen.selected == "aider")
        await until(pilot, lambda: fleet_line(app) == "3 agents · $0.00 today")
        await call(gw, "gpt-4o-mini")  # priced: $0.00021, all of it known
        await until(pilot, lambda: row_text(app, "aider").endswith("<$0.01"))
        assert title(app) == "aider · gpt-4o-mini · <$0.01 of $10.00 today"
        await until(pilot, lambda: fleet_line(app) == "3 agents · <$0.01 today")

        await call(gw, "mystery-model")  # a floor: at least $0.00021 more
        await until(pilot, lambda: row_text(app, "aider") == "○ aider <$0.01+$?")
        assert title(app) == "aider · gpt-4o-mini · <$0.01+$? of $10.00 today"
        assert row_classes(app, "aider") == {"-idle"}, "far under its ceiling: not amber"
        # The fleet line's sum says it too: the fleet spent at least that.
        await until(pilot, lambda: fleet_line(app) == "3 agents · <$0.01 + unpriced today")
