"""The real Aider (PyPI `aider-chat`) through the gateway on Chat
Completions, as `plane gateway env AGENT --client aider` points it. It lives
in its own virtualenv (`tests/e2e/aider`, made by `make test`: its pins would
fight the plane's); without it the test skips."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from tests.support.fixtures_gateway import GatewayPlane, StartGateway

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

AIDER = Path(__file__).parent / "aider" / "bin" / "aider"


async def aider(gw: GatewayPlane, home: Path, message: str) -> tuple[int, str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "OPENAI_API_BASE": f"{gw.url}/v1",
        "OPENAI_API_KEY": gw.keys["aider"],
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no fetch of litellm's price list
    }
    child = await asyncio.create_subprocess_exec(
        str(AIDER),
        "--model",
        "openai/scripted-model",
        "--no-git",
        "--yes-always",
        "--no-check-update",
        "--no-show-model-warnings",
        "--analytics-disable",
        "--no-pretty",
        "--no-stream",
        "--map-tokens",
        "0",
        "--message",
        message,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
        cwd=home,
    )
    out, _ = await asyncio.wait_for(child.communicate(), 150)
    assert child.returncode is not None
    return child.returncode, out.decode()


@pytest.mark.skipif(not AIDER.exists(), reason="Aider is not installed (make test does)")
async def test_aider_is_metered_then_held_without_a_retry_storm(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    gw = await start_gateway()
    home = tmp_path / "aider-home"
    home.mkdir()
    gw.llm.default_reply = "Four."  # type: ignore[assignment]
    code, out = await aider(gw, home, "What is 2+2?")
    assert code == 0 and "Four." in out, out
    asked = len(gw.llm.requests)
    assert asked >= 1
    entries = await gw.entries()
    assert [e.status for e in entries] == ["settled"] * asked
    spent = await gw.services.ledger.spend_today("aider")
    assert spent > 0

    await gw.services.gate.ceilings.set("aider", spent / 2)
    started = time.monotonic()
    code, out = await aider(gw, home, "And 3+3?")
    took = time.monotonic() - started
    said = " ".join(out.split())  # Aider wraps lines at its terminal's width
    # Aider 0.86 shows the plane's sentence through litellm, and stops (exit 0).
    assert code == 0, said
    assert "BadRequestError: OpenAIException - aider has spent $0.62 today, over its" in said
    assert "daily ceiling; it answers at 00:00 UTC, in 12h 00m" in said, said
    assert len(gw.llm.requests) == asked, "a held call reached the upstream"
    assert took < 60, f"Aider took {took:.0f} s to give up: it retried"
