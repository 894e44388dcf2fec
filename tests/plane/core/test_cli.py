"""The `plane` command, run as a user runs it: a real daemon process, real
socket, the scripted LLM server over real HTTP."""

import json
import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from plane.clock import next_midnight
from plane.protocol import Usage
from tests.support.fixtures_plane import CONFIG


def plane_cmd(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLANE_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "plane", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def daemon(tmp_path, scripted_llm):
    home = tmp_path / "home"
    config = tmp_path / "agents.yaml"
    config.write_text(CONFIG.replace("{base_url}", scripted_llm.base_url))
    env = {**os.environ, "PLANE_HOME": str(home)}
    process = subprocess.Popen(
        [sys.executable, "-m", "plane", "serve", "--config", str(config)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while plane_cmd(home, "status").returncode != 0:
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "the plane did not start"
        time.sleep(0.2)
    yield home
    process.terminate()
    process.wait(timeout=20)


def test_send_status_and_ledger(daemon, scripted_llm):
    scripted_llm.reply("Hello from the model.", usage=Usage(input_tokens=100, output_tokens=10))
    sent = plane_cmd(daemon, "send", "demo", "hello", "--wait")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.splitlines() == ["Hello from the model.", "  $0.12 · 100 in · 10 out"]

    status = json.loads(plane_cmd(daemon, "status", "--json").stdout)
    demo = next(a for a in status["agents"] if a["name"] == "demo")
    assert (demo["spend_today_usd"], demo["limit_usd"], demo["state"]) == ("0.12", "1", "idle")

    ledger = json.loads(plane_cmd(daemon, "ledger", "--json").stdout)
    [call] = ledger["calls"]
    assert (call["input_tokens"], call["output_tokens"], call["cost_usd"]) == (100, 10, "0.12")
    assert call["status"] == "settled" and "scripted-model" in call["price_source"]

    csv = plane_cmd(daemon, "ledger", "--csv").stdout.splitlines()
    assert csv[0].startswith("id,agent,day,at,provider,model") and len(csv) == 2


def test_status_says_what_a_new_agent_gets_and_when_a_held_agent_resumes(daemon, scripted_llm):
    scripted_llm.reply("Done.", usage=Usage(input_tokens=100, output_tokens=10))
    assert plane_cmd(daemon, "send", "demo", "work", "--wait").returncode == 0
    held = plane_cmd(daemon, "send", "demo", "/limit 0.10")  # $0.12 spent: over it
    assert held.stdout.startswith("Spending limit set to $0.10 a day.")

    status = json.loads(plane_cmd(daemon, "status", "--json").stdout)
    assert (status["default_model"], status["default_limit_usd"]) == ("scripted-model", "1")
    agents = {a["name"]: a for a in status["agents"]}
    assert agents["demo"]["state"] == "held"
    resumes_at = datetime.fromisoformat(agents["demo"]["resumes_at"])
    assert resumes_at == next_midnight(datetime.now(UTC))
    assert agents["scout"]["resumes_at"] is None

    text = plane_cmd(daemon, "status").stdout.splitlines()
    demo = next(line for line in text if line.startswith("  demo "))
    scout = next(line for line in text if line.startswith("  scout "))
    assert re.fullmatch(
        r"  demo   held     scripted-model  \$0\.12 of \$0\.10  resumes in (\d+h \d\dm|\d+m|\d+s)",
        demo,
    ), demo
    assert scout == "  scout  idle     scripted-model  $0.00 of $1.00"


def test_limit_from_the_command_line(daemon):
    lines = {}
    for typed in ("/limit", "/limit 5", "/limit off", "/limit abc"):
        result = plane_cmd(daemon, "send", "demo", typed)
        assert result.returncode == 0
        lines[typed] = result.stdout.strip()
    assert lines == {
        "/limit": "$0.00 spent today, of $1.00 a day.",
        "/limit 5": "Spending limit set to $5.00 a day. $0.00 spent today, of $5.00 a day.",
        "/limit off": "Spending limit removed. $0.00 spent today, against no limit.",
        "/limit abc": "abc is not an amount. Use /limit 5, /limit $0.25 or /limit off.",
    }
    status = json.loads(plane_cmd(daemon, "status", "--json").stdout)
    assert next(a for a in status["agents"] if a["name"] == "demo")["limit_usd"] is None


def test_new_agent_and_stop(daemon):
    created = plane_cmd(daemon, "new", "helper", "--model", "other-model", "--role", "be brief")
    assert created.stdout.strip() == "Created helper on other-model, $1.00 a day."
    taken = plane_cmd(daemon, "new", "helper", "--model", "other-model")
    assert taken.returncode == 1 and "already exists" in taken.stderr
    assert plane_cmd(daemon, "stop").returncode == 0
    deadline = time.monotonic() + 20
    while plane_cmd(daemon, "status").returncode == 0:
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_clear_errors_when_no_plane_runs(tmp_path):
    result = plane_cmd(tmp_path, "status")
    assert result.returncode == 1
    assert result.stderr.startswith("plane: No plane is running at ")
    assert "Traceback" not in result.stderr


def test_a_bad_config_stops_the_plane_before_it_starts(tmp_path):
    config = tmp_path / "agents.yaml"
    config.write_text("defaults:\n  limitUsd: 5\nagents:\n  demo:\n    limitUsd: 9\n")
    result = plane_cmd(tmp_path / "home", "serve", "--config", str(config))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"plane: {config} line 5: agents.demo.limitUsd: $9.00 is above defaults.limitUsd "
        "$5.00; an agent's own block can only narrow the default."
    )
    assert not (tmp_path / "home" / "plane.sock").exists()


@pytest.mark.parametrize("command", ["serve", "stop", "status", "send", "ledger", "new"])
def test_every_command_has_help(command, tmp_path):
    result = plane_cmd(tmp_path, command, "--help")
    assert result.returncode == 0 and "usage: plane" in result.stdout


def test_plane_alone_reports_a_daemon_that_could_not_start(tmp_path):
    (tmp_path / "agents.yaml").write_text("agents:\n  demo:\n    limitusd: 2\n")
    result = subprocess.run(
        [sys.executable, "-m", "plane"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PLANE_HOME": str(tmp_path / "home")},
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "plane: The plane did not start: agents.yaml line 3: agents.demo.limitusd: unknown key."
    )
