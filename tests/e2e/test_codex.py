"""The real Codex CLI (npm `@openai/codex`) through the gateway, configured
through a `model_providers` table as `plane gateway env AGENT --client codex`
prints it, to an upstream answering OpenAI Responses. Skips when Codex is
not installed (`make test` installs it where npm is)."""

from __future__ import annotations

import asyncio
import os
import time
from decimal import Decimal
from pathlib import Path

import pytest

from plane.gateway.keys import Keys
from plane.wire.protocol import Usage
from tests.support.billing import billed_usd
from tests.support.fixtures_gateway import CONFIG, GatewayPlane, StartGateway
from tests.support.fixtures_responses import Upstream, responses_config
from tests.support.scripted_llm import Reply

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

CODEX = Path(__file__).parent / "node" / "node_modules" / ".bin" / "codex"


async def codex_exec(
    gw: GatewayPlane,
    home: Path,
    key: str,
    prompt: str,
    model: str = "scripted-model",
    provider_lines: str = "",
) -> tuple[int, str]:
    (home / "config.toml").write_text(
        f'model = "{model}"\n'
        'model_provider = "plane"\n'
        "[model_providers.plane]\n"
        'name = "plane"\n'
        f'base_url = "{gw.url}/v1"\n'
        'env_key = "PLANE_GATEWAY_KEY"\n'
        'wire_api = "responses"\n' + provider_lines
    )
    env = {
        "PATH": os.environ["PATH"],
        "TZ": "UTC",
        "HOME": str(home),
        "CODEX_HOME": str(home),
        "PLANE_GATEWAY_KEY": key,
    }
    child = await asyncio.create_subprocess_exec(
        str(CODEX),
        "exec",
        "--skip-git-repo-check",
        prompt,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
        cwd=home,
    )
    out, _ = await asyncio.wait_for(child.communicate(), 90)
    assert child.returncode is not None
    return child.returncode, out.decode()


@pytest.mark.skipif(not CODEX.exists(), reason="Codex is not installed (make test does)")
async def test_codex_is_metered_then_held_without_a_retry_storm(
    start_gateway: StartGateway, responses_upstream: tuple[Upstream, str], tmp_path: Path
) -> None:
    served, base_url = responses_upstream
    gw = await start_gateway(responses_config(base_url))
    key = Keys(gw.home.gateway_keys).make("codex")
    await gw.services.gate.ceilings.set("codex", None)  # its prompt is dear at the test's prices
    home = tmp_path / "codex-home"
    home.mkdir()
    code, out = await codex_exec(gw, home, key, "Say hello.")
    assert code == 0, out
    assert "streamed answer" in out
    asked = len(served.requests)
    spent = await gw.services.ledger.spend_today("codex")
    assert spent > 0
    assert [e.status for e in await gw.entries()] == ["settled"] * asked

    await gw.services.gate.ceilings.set("codex", spent / 2)
    started = time.monotonic()
    code, out = await codex_exec(gw, home, key, "Again.")
    took = time.monotonic() - started
    # Codex 0.171 prints a 400's body, the plane's held sentence in it, and stops.
    assert code != 0
    assert "codex has spent $" in out and "it answers at 00:00 UTC, in 12h 00m" in out, out
    assert len(served.requests) == asked, "a held call reached the upstream"
    assert took < 30, f"Codex took {took:.0f} s to give up: it retried"


PRICED = CONFIG.replace("pricing:\n", "pricing:\n  codex-model: {input: 3, output: 15}\n")
"""The gateway tests' config, with a model at Codex-like prices ($3 / $15 per 1M)."""


@pytest.mark.skipif(not CODEX.exists(), reason="Codex is not installed (make test does)")
async def test_codex_sessions_in_parallel_under_a_dollar_are_refused_once_the_day_is_full(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    """Three Codex sessions at once, round after round, under a $1.00 ceiling
    (each call bills 50,000 prompt tokens and 500 out: $0.1575): whole rounds
    run until what is settled leaves no room for a call; then each session is
    refused, once, with the plane's sentence. The day ends within one call."""
    gw = await start_gateway(PRICED)
    await gw.services.gate.ceilings.set("aider", Decimal(1))
    usage = Usage(input_tokens=50_000, output_tokens=500)
    gw.llm.responder = lambda body, serial: Reply("hello there", usage, delay_s=0.3)
    arrived = gw.arrivals()
    homes = [tmp_path / f"codex-{n}" for n in range(3)]
    for home in homes:
        home.mkdir()
    rounds = []
    for n in range(5):
        ran = await asyncio.gather(
            *(
                codex_exec(gw, home, gw.keys["aider"], f"Say hello {n}.", "codex-model")
                for home in homes
            )
        )
        rounds.append(ran)
        if any(code != 0 for code, _ in ran):
            break
    *whole, last = rounds
    assert whole and all(code == 0 and "hello there" in out for r in whole for code, out in r)
    spent = await gw.services.ledger.spend_today("aider")
    left = (Decimal(1) - spent).quantize(Decimal("0.01"))
    refused = [out for code, out in last if code != 0]
    assert refused
    for out in refused:
        assert "aider is not answering this call: it would cost about $" in out, out
        assert f"and ${left} is left of its $1.00 daily ceiling today" in out, out
    # Each refused session asked once: Codex does not retry the plane's 400.
    assert arrived.count == len(gw.llm.requests) + len(refused)
    assert arrived.most_at_once >= 2, "the sessions' calls were never in flight together"
    one_call = Decimal("0.1575")
    assert Decimal(1) - one_call <= spent <= Decimal(1) + one_call
    assert spent == billed_usd(gw.llm.billed, gw.services.pricer)


@pytest.mark.skipif(not CODEX.exists(), reason="Codex is not installed (make test does)")
async def test_codex_carries_the_tag_gateway_env_gives_it_and_its_session(
    start_gateway: StartGateway, responses_upstream: tuple[Upstream, str], tmp_path: Path
) -> None:
    """The `http_headers` line `plane gateway env codex --client codex --tag
    ticket-123` prints, in Codex's provider table: every call carries it."""
    from plane.gateway.client_env import env_lines

    _, base_url = responses_upstream
    gw = await start_gateway(responses_config(base_url))
    await gw.services.gate.ceilings.set("codex", None)
    where = ("127.0.0.1", 1)
    lines = env_lines(gw.plane.config, gw.home, "codex", "codex", where, "ticket-123")
    [header] = [line.removeprefix("# ") for line in lines if "http_headers" in line]
    key = next(line.split("=", 1)[1] for line in lines if line.startswith("export PLANE_GATEWAY"))
    home = tmp_path / "codex-home"
    home.mkdir()
    code, out = await codex_exec(gw, home, key, "Say hello.", provider_lines=header + "\n")
    assert code == 0, out
    rows = await gw.db.fetchall("SELECT tag, session FROM calls")
    assert rows and {row["tag"] for row in rows} == {"ticket-123"}
    assert all(row["session"] for row in rows), "Codex's session header, kept with each call"
