"""The real Claude Code CLI through the gateway to the scripted upstream.

`make test` installs it (`npm install --prefix tests/e2e/node
@anthropic-ai/claude-code`); without it here the test skips. Claude Code is
pointed at the plane exactly as `plane gateway env AGENT --client
claude-code` says, with HOME in a temporary directory so nothing of the
machine's own set-up is read or written."""

from __future__ import annotations

import asyncio
import os
import time
from decimal import Decimal
from pathlib import Path

import pytest

from tests.support.fixtures_gateway import CONFIG, GatewayPlane, StartGateway

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

CLAUDE = Path(__file__).parent / "node" / "node_modules" / ".bin" / "claude"
CLAUDE_CONFIG = CONFIG.replace(
    "pricing:\n",
    "pricing:\n  claude: {input: 3, cache_write: 3.75, cached_input: 0.3, output: 15}\n",
)


async def claude_p(gw: GatewayPlane, home: Path, prompt: str) -> tuple[int, str, str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": gw.url,
        "ANTHROPIC_AUTH_TOKEN": gw.keys["claude"],
        "ANTHROPIC_API_KEY": "",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    child = await asyncio.create_subprocess_exec(
        str(CLAUDE),
        "-p",
        prompt,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=home,
    )
    out, err = await asyncio.wait_for(child.communicate(), 90)
    assert child.returncode is not None
    return child.returncode, out.decode(), err.decode()


@pytest.mark.skipif(not CLAUDE.exists(), reason="Claude Code is not installed (make test does)")
async def test_claude_code_is_metered_then_held_without_a_retry_storm(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    gw = await start_gateway(CLAUDE_CONFIG)
    home = tmp_path / "claude-home"
    home.mkdir()
    gw.llm.default_reply = "The answer is four."  # type: ignore[assignment]

    code, out, err = await claude_p(gw, home, "What is 2+2? Answer in one sentence.")
    assert code == 0, (out, err)
    assert "The answer is four." in out
    metered = len(gw.llm.requests)
    assert metered >= 1
    entries = await gw.entries()
    assert entries and all(e.agent == "claude" and e.status == "settled" for e in entries)
    spent = await gw.services.ledger.spend_today("claude")
    assert spent == sum((e.cost_usd for e in entries), Decimal(0)) > 0
    assert (await gw.crew.state("claude")).spend_today_usd == spent

    await gw.services.gate.ceilings.set("claude", spent / 2)
    started = time.monotonic()
    code, out, err = await claude_p(gw, home, "And 3+3?")
    took = time.monotonic() - started
    said = out + err
    assert code != 0
    # Claude Code 2.1 shows the plane's sentence verbatim, and stops at once.
    assert "API Error: Request rejected (429) · claude has spent $0.06 today, over its" in said
    assert "daily ceiling; it answers at 00:00 UTC, in 12h 00m" in said, said
    assert len(gw.llm.requests) == metered, "a held call reached the upstream"
    assert took < 30, f"Claude Code took {took:.0f} s to give up: it retried"
