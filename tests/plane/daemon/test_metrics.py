"""`GET /metrics` on the real HTTP listener, scraped over TCP and read with
prometheus_client's own text parser, after a real turn on the scripted LLM."""

from decimal import Decimal

import pytest
from prometheus_client.parser import text_string_to_metric_families

from plane.daemon.metrics import CALLS
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_gateway import CONFIG, StartGateway
from tests.support.local_http import local_client

SPENDY = Usage(input_tokens=100, cache_read_tokens=40, output_tokens=10)
"""60 uncached at $0.001, 40 cached at $0.0001, 10 out at $0.002: $0.084 a call."""


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def _turn(gw, agent: str, text: str) -> None:
    watching = gw.plane.bus.subscribe()
    await gw.runtime.api.handle(p.Send(agent=agent, text=text))
    while True:
        event = await watching.next()
        if isinstance(event, p.TurnFinished) and event.agent == agent:
            break
    await gw.crew.workers[agent].turn_lock.acquire()  # the cost line is written
    gw.crew.workers[agent].turn_lock.release()


async def test_a_scrape_says_spend_ceiling_calls_tokens_and_compression(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    command = 'for i in $(seq 1 300); do echo "Setting up libfoo$i (1.2.$i) ..."; done'
    gw.llm.reply("", tool_calls=[("run_command", {"command": command})], usage=SPENDY)
    gw.llm.reply("Installed.", usage=SPENDY)
    await _turn(gw, "demo", "install things")

    async with local_client() as client:
        answer = await client.get(
            f"{gw.url}/metrics", headers={"Authorization": f"Bearer {gw.home.token.read_text()}"}
        )
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    got = samples(answer.text)
    demo = (("agent", "demo"),)
    model = (("agent", "demo"), ("gen_ai_request_model", "scripted-model"))
    assert got["plane_agent_spend_today_usd", demo] == 0.168
    assert got["plane_agent_ceiling_usd", demo] == 10.0
    assert got["plane_agent_held", (("agent", "demo"), ("reason", ""))] == 0.0
    assert got["plane_agent_price_known", demo] == 1.0
    assert got["plane_day_resets_in_seconds", ()] == 12 * 3600  # the plane's clock: noon
    assert got["plane_llm_calls_total", (*model, ("status", "settled"))] == 2
    assert got["plane_llm_tokens_total", (*model, ("gen_ai_token_type", "input"))] == 200
    assert got["plane_llm_tokens_total", (*model, ("gen_ai_token_type", "cache_read"))] == 80
    assert got["plane_llm_tokens_total", (*model, ("gen_ai_token_type", "output"))] == 20
    assert got["plane_llm_cost_usd_total", demo] == 0.168
    [(chars, usd)] = [
        (row["chars"], row["usd"]) for row in await gw.db.fetchall("SELECT chars, usd FROM savings")
    ]
    assert chars > 10_000, "the listing was not compressed"
    assert got["plane_compression_removed_characters_total", demo] == chars
    # 4 characters a token, at the model's $1000 per 1M input tokens
    assert Decimal(usd) == Decimal(chars // 4) * Decimal("0.001")
    assert got["plane_compression_saved_usd_total", demo] == float(usd)
    assert ("plane_agent_ceiling_usd", (("agent", "claude"),)) in got
    assert "gen_ai.usage.cache_read.input_tokens" in answer.text  # the HELP says which attribute


async def test_a_held_agent_is_held_in_the_scrape(start_gateway: StartGateway) -> None:
    gw = await start_gateway()
    await gw.runtime.api.handle(p.Send(agent="demo", text="/limit 0"))
    await gw.runtime.api.handle(p.Send(agent="demo", text="are you there?"))
    text = await gw.scrape()
    got = samples(text)
    assert got["plane_agent_held", (("agent", "demo"), ("reason", "ceiling"))] == 1.0
    assert got["plane_agent_ceiling_usd", (("agent", "demo"),)] == 0.0
    assert got["plane_agent_waiting_messages", (("agent", "demo"),)] == 1.0


async def test_without_the_token_a_scrape_gets_401_and_no_figures(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    token = gw.home.token.read_text()
    async with local_client() as client:
        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": f"Bearer {token}x"},
            {"Authorization": f"Basic {token}"},
            {"Authorization": token},
            {"x-api-key": gw.keys["claude"]},  # a gateway agent's key is not the operator's
        ):
            answer = await client.get(f"{gw.url}/metrics", headers=headers)
            assert answer.status_code == 401, headers
            assert answer.headers["www-authenticate"] == 'Bearer realm="plane"'
            assert "plane_" not in answer.text and "demo" not in answer.text


async def test_what_the_gateways_compression_saved_is_scraped_too(
    start_gateway: StartGateway,
) -> None:
    from tests.plane.gateway.test_gateway_calls import COMPRESSING, _anthropic_request

    gw = await start_gateway(COMPRESSING)
    await gw.services.gate.ceilings.set("claude", None)
    headers = {"x-api-key": gw.keys["claude"], "anthropic-version": "2023-06-01"}
    async with local_client() as client:
        watching = gw.watch()
        answer = await client.post(
            f"{gw.url}/v1/messages", json=_anthropic_request(), headers=headers
        )
        assert answer.status_code == 200
        await gw.settled(watching, "claude")
    text = await gw.scrape()
    [chars] = [
        row["chars"]
        for row in await gw.db.fetchall("SELECT chars FROM savings WHERE agent = 'claude'")
    ]
    assert chars > 1000
    assert (
        samples(text)["plane_compression_removed_characters_total", (("agent", "claude"),)] == chars
    )


COMPACTING = CONFIG + (
    "compression:\n  enabled: false\n"
    "session:\n  compact_enabled: true\n  compact_keep_last_n_turns: 1\n"
    "  compact_min_chars: 200\n  compact_trigger_chars: 1500\n"
)
"""Compression off, compaction on: what is saved is compaction's alone."""


async def test_what_compaction_saved_is_said_and_scraped_as_compactions(
    start_gateway: StartGateway,
) -> None:
    """Compaction's saving was recorded and shown as compression's: with
    compression off, the cost line said "compression saved" and the scrape's
    `plane_compression_*` counted it. Each lever's saving under its own name."""
    gw = await start_gateway(COMPACTING)
    for n in range(5):
        command = "seq 1 2000" if n < 3 else "echo done"
        gw.llm.reply("", tool_calls=[("run_command", {"command": command})], usage=SPENDY)
        gw.llm.reply(f"done {n}", usage=SPENDY)
        await _turn(gw, "demo", f"task {n}")
    rows = await gw.db.fetchall("SELECT chars, usd, lever FROM savings WHERE agent = 'demo'")
    assert rows and {row["lever"] for row in rows} == {"compaction"}
    chars = sum(row["chars"] for row in rows)
    lines = [m.text for m in await gw.said("demo") if "saved" in m.text]
    assert lines and all(" · compaction saved " in line for line in lines), lines
    assert not any("compression saved" in line for line in lines), lines
    got = samples(await gw.scrape())
    demo = (("agent", "demo"),)
    assert ("plane_compression_removed_characters_total", demo) not in got
    assert got["plane_compaction_removed_characters_total", demo] == chars
    usd = sum(Decimal(row["usd"]) for row in rows)
    assert got["plane_compaction_saved_usd_total", demo] == float(usd)


SLOW = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000000) "
    + CALLS.replace(" GROUP BY", " WHERE (SELECT COUNT(*) FROM c) > 0 GROUP BY")
)
"""The scrape's sums over a ledger of millions of calls: a read of a second or more."""


@pytest.mark.slow
@pytest.mark.usefixtures("each_store")
async def test_a_long_scrape_holds_up_no_other_read(start_plane, monkeypatch) -> None:
    """Every turn reads what waits; a scrape summing a long-lived ledger must
    not make those reads queue behind it (on the plane's one reader they did,
    for the whole of the sum)."""
    import asyncio
    import time

    from plane.daemon import metrics

    plane = await start_plane()
    await plane.services.ledger.open_call("demo", "p", "m", Decimal("0.01"), "estimate")
    monkeypatch.setattr(metrics, "CALLS", SLOW)
    scrape = metrics.Metrics(plane.rows.snapshot, plane.runtime.db).scrape
    started = time.monotonic()
    scraping = asyncio.create_task(scrape())
    await asyncio.sleep(0.1)  # the sum is under way
    await plane.services.conversation.waiting("demo")
    read_in = time.monotonic() - started
    await scraping
    scraped_in = time.monotonic() - started
    assert read_in < scraped_in / 2, f"a read waited {read_in:.2f} s of a {scraped_in:.2f} s scrape"
    assert b"plane_llm_calls" in scraping.result()


async def test_an_agent_on_a_model_with_no_price_says_so_in_the_scrape(start_plane) -> None:
    """Its spend reads $0, which is not what its calls cost: the scrape says
    the price is not known, so a dashboard need not take the $0 as free."""
    from plane.daemon.metrics import Metrics
    from tests.support.fixtures_plane import CONFIG

    plane = await start_plane(CONFIG.replace("  demo: {}", "  demo: {model: other-model}"))
    got = samples((await Metrics(plane.rows.snapshot, plane.runtime.db).scrape()).decode())
    assert got["plane_agent_price_known", (("agent", "demo"),)] == 0.0
    assert got["plane_agent_price_known", (("agent", "scout"),)] == 1.0
