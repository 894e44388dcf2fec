"""The real `plane` command: `plane serve --http`, `plane key`, `plane gateway env`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from plane.clock import ManualClock
from plane.config import parse_config
from plane.daemon.server import Plane
from plane.errors import PlaneError
from plane.gateway.client_env import env_lines
from plane.home import Home
from tests.support import local_http
from tests.support.command import plane_cli
from tests.support.fixtures_gateway import CONFIG, NOON, StartGateway
from tests.support.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.timeout(60)


def config(tmp_path: Path, llm: ScriptedLLM) -> Path:
    path = tmp_path / "agents.yaml"
    text = CONFIG.replace("{base_url}", llm.base_url).replace("{anthropic_url}", llm.anthropic_url)
    path.write_text(text)
    return path


@pytest.mark.slow
def test_serve_with_http_meters_a_call_made_with_a_key_from_plane_key(
    tmp_path: Path, scripted_llm: ScriptedLLM
) -> None:
    home, path = tmp_path / "home", config(tmp_path, scripted_llm)
    made = plane_cli(home, "key", "claude", "--config", str(path))
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    assert key.startswith("plane-claude-") and key not in (home / "gateway-keys").read_text()
    env = {**os.environ, "PLANE_HOME": str(home)}
    serving = subprocess.Popen(
        [sys.executable, "-m", "plane", "serve", "--config", str(path), "--http", "127.0.0.1:0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        port = None
        while port is None:
            assert serving.poll() is None and time.monotonic() < deadline
            log = (home / "plane.log").read_text() if (home / "plane.log").exists() else ""
            if found := re.search(r"the gateway on http://127\.0\.0\.1:(\d+)", log):
                port = int(found.group(1))
            else:
                time.sleep(0.1)
        scripted_llm.reply("hi")
        answer = local_http.post(
            f"http://127.0.0.1:{port}/v1/messages",
            headers={"x-api-key": key},
            json={
                "model": "scripted-model",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "x"}],
            },
        )
        assert answer.status_code == 200, answer.text
        ledger = plane_cli(home, "ledger", "--json")
        [entry] = json.loads(ledger.stdout)["calls"]
        assert (entry["agent"], entry["status"]) == ("claude", "settled")
    finally:
        plane_cli(home, "stop")
        serving.wait(timeout=20)


@pytest.mark.parametrize(
    ("agent", "client", "expected"),
    [
        ("claude", "claude-code", "export ANTHROPIC_AUTH_TOKEN=plane-claude-"),
        ("aider", "aider", "export OPENAI_API_BASE=http://127.0.0.1:7878/v1"),
        ("aider", "codex", '# base_url = "http://127.0.0.1:7878/v1"'),
    ],
)
def test_gateway_env_prints_the_lines_for_each_client(
    tmp_path: Path, scripted_llm: ScriptedLLM, agent: str, client: str, expected: str
) -> None:
    path = config(tmp_path, scripted_llm)
    where = ("--http", "127.0.0.1:7878")  # no plane runs: where one would listen
    result = plane_cli(
        tmp_path / "home",
        "gateway",
        "env",
        agent,
        "--client",
        client,
        *where,
        "--config",
        str(path),
    )
    assert result.returncode == 0, result.stderr
    assert expected in result.stdout


@pytest.mark.parametrize("client", ["claude-code", "codex", "aider"])
def test_gateway_env_points_every_client_at_an_agent_on_the_embedded_model(
    tmp_path: Path, client: str
) -> None:
    """The embedded model speaks Anthropic's API and OpenAI's (the README: "a
    client can be tried against the plane with no key and no network")."""
    path = tmp_path / "agents.yaml"
    path.write_text("agents:\n  trial: {provider: embedded, gateway: {}}\n")
    result = plane_cli(
        tmp_path / "home",
        *("gateway", "env", "trial", "--client", client, "--http", "127.0.0.1:7878"),
        *("--config", str(path)),
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert "plane-trial-" in result.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["key", "demo"], "'demo' is not a gateway agent in agents.yaml"),
        (["gateway", "env", "claude", "--client", "aider"], "aider speaks Chat Completions"),
        (["gateway", "env", "claude", "--client", "codex"], "codex speaks OpenAI Responses"),
    ],
)
def test_a_command_that_cannot_be_done_says_why_in_one_line(
    tmp_path: Path, scripted_llm: ScriptedLLM, args: list[str], said: str
) -> None:
    path = config(tmp_path, scripted_llm)
    result = plane_cli(tmp_path / "home", *args, "--config", str(path))
    assert result.returncode != 0 and result.stdout == ""
    assert said in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "home" / "gateway-keys").exists()


async def test_gateway_env_points_at_the_listener_the_running_plane_has(
    start_gateway: StartGateway,
) -> None:
    """Not a default port: the one `plane serve --http 127.0.0.1:0` picked."""
    gw = await start_gateway()
    port = gw.plane.http_port
    assert port is not None and port != 7878
    config = gw.plane.config
    lines = env_lines(config, gw.home, "claude", "claude-code", None)
    assert f"export ANTHROPIC_BASE_URL=http://127.0.0.1:{port}" in lines
    codex = env_lines(config, gw.home, "aider", "codex", None)
    assert f'# base_url = "http://127.0.0.1:{port}/v1"' in codex
    gw.plane.stop_event.set()
    await gw.plane.shutdown()
    with pytest.raises(PlaneError, match=r"No plane is running in .*, so no gateway listens"):
        env_lines(config, gw.home, "claude", "claude-code", None)


async def test_gateway_env_says_when_the_running_plane_has_no_gateway(
    tmp_path: Path, scripted_llm: ScriptedLLM
) -> None:
    text = CONFIG.replace("{base_url}", scripted_llm.base_url)
    config_ = parse_config(text.replace("{anthropic_url}", scripted_llm.anthropic_url))
    home = Home(tmp_path / "home")
    running = Plane(config_, home, ManualClock(NOON))  # no --http
    await running.startup()
    try:
        with pytest.raises(PlaneError, match=r"has no gateway listener .* without --http"):
            env_lines(config_, home, "claude", "claude-code", None)
        assert not home.gateway_keys.exists(), "a key was made for lines never printed"
    finally:
        running.stop_event.set()
        await running.shutdown()


@pytest.mark.parametrize(
    ("agent", "client", "expected"),
    [
        ("claude", "claude-code", "export ANTHROPIC_CUSTOM_HEADERS='x-plane-tag: ticket-123'"),
        ("aider", "codex", '# http_headers = { "x-plane-tag" = "ticket-123" }'),
        ("aider", "aider", "#     extra_headers: {x-plane-tag: ticket-123}"),
    ],
)
def test_gateway_env_with_a_tag_makes_every_call_of_the_client_carry_it(
    tmp_path: Path, scripted_llm: ScriptedLLM, agent: str, client: str, expected: str
) -> None:
    path = config(tmp_path, scripted_llm)
    result = plane_cli(
        tmp_path / "home",
        *("gateway", "env", agent, "--client", client, "--http", "127.0.0.1:7878"),
        *("--tag", "ticket-123", "--config", str(path)),
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert expected in result.stdout.splitlines()


def test_gateway_env_refuses_a_tag_that_is_not_one(tmp_path: Path) -> None:
    result = plane_cli(
        tmp_path / "home",
        *("gateway", "env", "claude", "--client", "claude-code", "--tag", "two words"),
    )
    assert result.returncode == 2
    assert "argument --tag: 'two words' is not a tag (1–64 characters" in result.stderr
