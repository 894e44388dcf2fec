"""The shipped agents.yaml on the real embedded model (llama.cpp + SmolLM2),
driven by the real `plane` command: an answer, real tokens, a notional cost."""

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from tests.support.answering import until_it_answers

pytestmark = pytest.mark.embedded  # starts the real embedded model itself

REPO = Path(__file__).parents[3]


def plane(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "plane", *args],
        env={**os.environ, "PLANE_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )


def test_hello_from_the_embedded_model(tmp_path):
    home = tmp_path / "home"
    server = subprocess.Popen(
        [sys.executable, "-m", "plane", "serve"],
        env={**os.environ, "PLANE_HOME": str(home)},
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        until_it_answers(home, server, within=120)
        sent = plane(home, "send", "demo", "Say hello in five words.", "--wait")
        assert sent.returncode == 0, sent.stderr
        answer, cost_line = sent.stdout.rstrip("\n").rsplit("\n", 1)
        assert answer.strip()
        assert " in · " in cost_line or " cached) · " in cost_line

        status = json.loads(plane(home, "status", "--json").stdout)
        demo = next(a for a in status["agents"] if a["name"] == "demo")
        assert Decimal(demo["spend_today_usd"]) > 0 and demo["model"] == "smollm2-135m"

        [call] = json.loads(plane(home, "ledger", "--json").stdout)["calls"]
        assert call["input_tokens"] > 10 and call["output_tokens"] > 0
        assert Decimal(call["cost_usd"]) > 0 and "smollm2" in call["price_source"]
        assert call["status"] == "settled" and not call["estimated"]
    finally:
        server.terminate()
        assert server.wait(timeout=30) == 0
