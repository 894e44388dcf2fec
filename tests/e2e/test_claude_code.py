"""The real Claude Code CLI through the gateway to the scripted upstream.

`make test` installs it (`npm install --prefix tests/e2e/node
@anthropic-ai/claude-code`); without it here the test skips. Claude Code is
pointed at the plane exactly as `plane gateway env AGENT --client
claude-code` says, with HOME in a temporary directory so nothing of the
machine's own set-up is read or written."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from plane.wire.protocol import Usage
from tests.support.billing import billed_usd
from tests.support.fixtures_gateway import CONFIG, GatewayPlane, StartGateway
from tests.support.scripted_llm import Reply

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

CLAUDE = Path(__file__).parent / "node" / "node_modules" / ".bin" / "claude"
CLAUDE_CONFIG = CONFIG.replace(
    "pricing:\n",
    "pricing:\n  claude: {input: 3, cache_write: 3.75, cached_input: 0.3, output: 15}\n",
)


async def claude_p(gw: GatewayPlane, home: Path, prompt: str, **extra: str) -> tuple[int, str, str]:
    env = {
        **extra,
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
    gw.llm.default_reply = "The answer is four."

    code, out, err = await claude_p(gw, home, "What is 2+2? Answer in one sentence.")
    assert code == 0, (out, err)
    assert "The answer is four." in out
    metered = len(gw.llm.requests)
    assert metered >= 1
    entries = await gw.entries()
    assert entries and all(e.agent == "claude" and e.status == "settled" for e in entries)
    spent = await gw.services.ledger.spend_today("claude")
    assert spent == sum((e.cost_usd for e in entries), Decimal(0)) > 0
    assert (await gw.rows.state("claude")).spend_today_usd == spent

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


def fan_out(body: dict[str, Any], serial: int) -> Reply:
    """A scripted model that delegates: asked a task, it starts three
    subagents at once (Claude Code's `Agent` tool, run in parallel); each
    answers; then it sums up. Every call bills 40,000 prompt tokens and 500
    out ($0.1275 at the test's $3 / $15), and takes a moment."""
    usage = Usage(input_tokens=40_000, output_tokens=500)
    messages = body.get("messages", [])
    first = json.dumps(messages[:1])
    last = messages[-1] if messages else {}
    if "SUBTASK" in first:
        return Reply("Subtask done.", usage, delay_s=0.3)
    if any(p.get("type") == "tool_result" for p in last.get("content", []) if isinstance(p, dict)):
        return Reply("All three parts are done.", usage, delay_s=0.3)
    agents = tuple(
        ("Agent", {"description": f"part {i}", "prompt": f"SUBTASK {i}: reply done."})
        for i in range(3)
    )
    return Reply("", usage, tool_calls=agents, delay_s=0.3)


@pytest.mark.skipif(not CLAUDE.exists(), reason="Claude Code is not installed (make test does)")
async def test_claude_code_fanning_out_under_a_dollar_is_refused_once_when_the_day_is_full(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    """Sessions of five calls, three of them subagents in flight together,
    under a $1.00 ceiling: every session runs whole until what is settled
    leaves no room for a call, then the session is refused, once, with the
    plane's sentence; the day ends within one call of the ceiling. (Near so
    small a ceiling the plane sends the subagents' calls one after another:
    two answers of up to 64,000 tokens each could end the day more than one
    call over it.)"""
    gw = await start_gateway(CLAUDE_CONFIG)
    await gw.services.gate.ceilings.set("claude", Decimal(1))
    gw.llm.responder = fan_out
    arrived = gw.arrivals()
    home = tmp_path / "claude-home"
    home.mkdir()
    sessions = []
    for n in range(8):
        code, out, err = await claude_p(gw, home, f"Task {n}: do it in three parts, in parallel.")
        sessions.append((code, out + err))
        if code != 0:
            break
    *whole, (last_code, last_said) = sessions
    assert whole and all(code == 0 and "API Error" not in said for code, said in whole), whole
    assert all("All three parts are done." in said for _, said in whole)
    assert last_code != 0
    assert last_said.count("API Error") == 1, last_said
    refusal = re.search(
        r"claude is not answering this call: it would cost about \$([\d.]+), and "
        r"\$([\d.]+) is left of its \$1\.00 daily ceiling today",
        last_said,
    )
    assert refusal is not None, last_said
    spent = await gw.services.ledger.spend_today("claude")
    likely, left = Decimal(refusal.group(1)), Decimal(refusal.group(2))
    assert likely > left and left == (Decimal(1) - spent).quantize(Decimal("0.01"))
    entries = await gw.entries()
    assert all(e.status == "settled" and not e.estimated for e in entries)
    one_call = max(e.cost_usd for e in entries)
    assert Decimal(1) - one_call <= spent <= Decimal(1) + one_call
    assert spent == billed_usd(gw.llm.billed, gw.services.pricer)
    # The subagents' calls were in flight together. When the day filled, each
    # call then in flight, and the session's next, was refused once: none
    # retried (Retry-After is until 00:00 UTC), and none before.
    assert len(gw.llm.requests) >= 5 * len(whole)
    assert arrived.most_at_once >= 3
    assert 1 <= arrived.count - len(gw.llm.requests) <= 3


@pytest.mark.skipif(not CLAUDE.exists(), reason="Claude Code is not installed (make test does)")
async def test_claude_code_carries_the_tag_gateway_env_gives_it_and_its_session(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    """`plane gateway env claude --client claude-code --tag ticket-123`'s
    header line, as the shell would export it: every call carries the tag,
    and the ledger keeps Claude Code's session with each call."""
    from plane.gateway.client_env import env_lines

    gw = await start_gateway(CLAUDE_CONFIG)
    gw.llm.default_reply = "Tagged."
    where = ("127.0.0.1", 1)  # the key and the header are what matter here
    lines = env_lines(gw.plane.config, gw.home, "claude", "claude-code", where, "ticket-123")
    [header] = [line for line in lines if "ANTHROPIC_CUSTOM_HEADERS" in line]
    value = header.split("=", 1)[1].strip("'")
    gw.keys["claude"] = next(
        line.split("=", 1)[1] for line in lines if line.startswith("export ANTHROPIC_AUTH_TOKEN=")
    )
    home = tmp_path / "claude-home"
    home.mkdir()
    code, out, err = await claude_p(gw, home, "Say something.", ANTHROPIC_CUSTOM_HEADERS=value)
    assert code == 0, (out, err)
    rows = await gw.db.fetchall("SELECT tag, session FROM calls")
    assert rows and {row["tag"] for row in rows} == {"ticket-123"}
    assert all(row["session"] for row in rows), "Claude Code's session, kept with each call"
