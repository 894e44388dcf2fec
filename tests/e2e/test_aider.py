"""The real Aider (PyPI `aider-chat`) through the gateway on Chat
Completions, as `plane gateway env AGENT --client aider` points it. It lives
in its own virtualenv (`tests/e2e/aider`, made by `make test`: its pins would
fight the plane's); without it the test skips."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from plane.wire.protocol import Usage
from tests.support.billing import billed_usd
from tests.support.fixtures_gateway import CONFIG, GatewayPlane, StartGateway
from tests.support.scripted_llm import Reply

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

AIDER = Path(__file__).parent / "aider" / "bin" / "aider"


async def aider(
    gw: GatewayPlane, home: Path, message: str, model: str = "openai/scripted-model"
) -> tuple[int, str]:
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
        model,
        *(["--model-settings-file", "models.yml"] if (home / "models.yml").exists() else []),
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
    gw.llm.default_reply = "Four."
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


TWO_ANSWERS = """
- name: openai/aider-model
  extra_params:
    n: 2
"""
"""Aider's model settings: every call asks for two answers (`n: 2`)."""


@pytest.mark.skipif(not AIDER.exists(), reason="Aider is not installed (make test does)")
async def test_aider_in_parallel_asking_two_answers_is_refused_once_the_day_is_full(
    start_gateway: StartGateway, tmp_path: Path
) -> None:
    """Two Aiders at once, round after round, under a $1.00 ceiling, each call
    asking `n: 2` (billed 40,000 prompt tokens and 2 × 2,000 out: $0.30): whole
    rounds run until what is settled leaves no room for a call, whose two
    answers are counted; then the plane's sentence. The day ends within one call.
    At $0.30 a call the first round leaves room for one call and not two: the
    second round is the last, one Aider answered and the other refused (each
    Aider a process of its own, ~3 CPU-seconds each: rounds are dear)."""
    gw = await start_gateway(
        CONFIG.replace("pricing:\n", "pricing:\n  aider-model: {input: 5, output: 25}\n")
    )
    await gw.services.gate.ceilings.set("aider", Decimal(1))
    both_in = threading.Event()  # the first round's two calls are in flight together

    def respond(body: dict[str, Any], serial: int) -> Reply:
        if len(gw.llm.requests) >= 2:
            both_in.set()
        both_in.wait(20)  # however far apart a loaded machine starts the two Aiders
        usage = Usage(input_tokens=40_000, output_tokens=2000 * body.get("n", 1))
        return Reply("Four.", usage, delay_s=0.3)

    gw.llm.responder = respond
    arrived = gw.arrivals()
    homes = [tmp_path / f"aider-{n}" for n in range(2)]
    for home in homes:
        home.mkdir()
        (home / "models.yml").write_text(TWO_ANSWERS)
    rounds = []
    for n in range(6):
        ran = await asyncio.gather(
            *(aider(gw, home, f"What is {n}+2?", model="openai/aider-model") for home in homes)
        )
        rounds.append(ran)
        if any("BadRequestError" in out for _, out in ran):
            break
    assert all(body.get("n") == 2 for body in gw.llm.requests)
    *whole, last = rounds
    refusals = ("BadRequestError", "RateLimitError")
    assert whole and all(
        "Four." in out and not any(e in out for e in refusals) for r in whole for _, out in r
    )
    spent = await gw.services.ledger.spend_today("aider")
    left = (Decimal(1) - spent).quantize(Decimal("0.01"))
    refused = [" ".join(out.split()) for _, out in last if "BadRequestError" in out]
    assert refused
    for said in refused:
        assert "aider is not answering this call: it would cost about $0.3" in said, said
        assert f"and ${left} is left of its $1.00 daily ceiling today" in said, said
    assert arrived.count == len(gw.llm.requests) + len(refused), "Aider retried"
    assert arrived.most_at_once >= 2
    one_call = Decimal("0.30")
    assert Decimal(1) - one_call <= spent <= Decimal(1) + one_call
    assert spent == billed_usd(gw.llm.billed, gw.services.pricer)
