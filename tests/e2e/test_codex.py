"""The real Codex CLI (npm `@openai/codex`) through the gateway, configured
through a `model_providers` table as `plane gateway env AGENT --client codex`
prints it, to an upstream answering OpenAI Responses. Skips when Codex is
not installed (`make test` installs it where npm is)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from plane.gateway.keys import Keys
from tests.support.fixtures_gateway import GatewayPlane, StartGateway
from tests.support.fixtures_responses import Upstream, responses_config

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

CODEX = Path(__file__).parent / "node" / "node_modules" / ".bin" / "codex"


async def codex_exec(gw: GatewayPlane, home: Path, key: str, prompt: str) -> tuple[int, str]:
    (home / "config.toml").write_text(
        'model = "scripted-model"\n'
        'model_provider = "plane"\n'
        "[model_providers.plane]\n"
        'name = "plane"\n'
        f'base_url = "{gw.url}/v1"\n'
        'env_key = "PLANE_GATEWAY_KEY"\n'
        'wire_api = "responses"\n'
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
