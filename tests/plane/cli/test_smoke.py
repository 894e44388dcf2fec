"""Each command once as a user runs it: the real `plane` entry point in a
process of its own, its exit code and one line. What each command says, in
every case, is tested in the test's own process (test_cli.py and beside it):
a process costs a Python start and the imports each time."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from plane.wire.protocol import Usage
from tests.support.command import plane_process
from tests.support.fixtures_plane import CONFIG, StartPlane

pytestmark = pytest.mark.slow
"""A Python start and the command's imports each (about half a CPU-second):
`make test` runs them; `make test-fast` tests the same commands' every
sentence in its own process (test_cli.py and beside it)."""

GATEWAY = CONFIG + "  claude:\n    gateway: {}\n"

ON_A_PLANE = [
    (["send", "demo", "hello", "--wait"], 0, r"Hello\."),
    (["ledger", "--csv"], 0, r"id,agent,day,at,provider,model,.*"),
    (["new", "poet", "--model", "other-model"], 0, r"Created poet on other-model, .*"),
    (["show", "demo"], 0, r"demo \(from agents\.yaml\)"),
    (["log", "nobody"], 1, r"plane: No agent named 'nobody'\. `plane status` lists them\."),
    (["pause", "demo"], 0, r"Paused demo: it takes no new turn until `plane resume demo`\."),
    (["resume", "demo"], 1, r"plane: demo is not paused: there is nothing to resume\."),
    (["rename", "scout", "seeker"], 1, r"plane: scout comes from agents\.yaml: rename .*"),
    (["edit", "demo", "--limit", "2"], 0, r"Edited demo\."),
    (["interrupt", "demo"], 1, r"plane: demo is not taking a turn: there is nothing .*"),
    (["delete", "scout", "--yes"], 1, r"plane: scout comes from agents\.yaml: remove .*"),
    (["key", "claude"], 0, r"\S+"),
    (["gateway", "env", "claude", "--client", "aider"], 0, r"# A new key for claude; .*"),
    (["stop", "--no-wait"], 0, r"The plane is stopping\."),
]


@pytest.mark.parametrize(("args", "code", "line"), ON_A_PLANE, ids=lambda v: str(v))
async def test_each_command_runs_as_a_user_runs_it(
    start_plane: StartPlane, tmp_path: Path, args: list[str], code: int, line: str
) -> None:
    http = ("127.0.0.1", 0) if args[0] == "gateway" else None  # what `gateway env` names
    plane = await start_plane(GATEWAY, http=http)
    plane.llm.reply("Hello.", usage=Usage(input_tokens=10))
    config = tmp_path / "agents.yaml"  # `key` and `gateway env` read it where they stand
    config.write_text(GATEWAY.replace("{base_url}", plane.llm.base_url))
    done = await asyncio.to_thread(plane_process, plane.home.root, *args, cwd=tmp_path)
    said = done.stdout if code == 0 else done.stderr
    assert done.returncode == code, done.stderr
    assert re.fullmatch(line, said.splitlines()[0]), said


async def test_status_runs_as_scripts_poll_it(start_plane: StartPlane) -> None:
    """Scripts poll it: the process loads neither pydantic nor the protocol's
    models, nor asyncio (a third of its CPU before it sent a byte: one
    request and its reply need no event loop)."""
    plane = await start_plane()
    command = [sys.executable, "-X", "importtime", "-m", "plane", "status", "--json"]
    env = {**os.environ, "PLANE_HOME": str(plane.home.root)}
    done = await asyncio.to_thread(
        subprocess.run, command, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert [a["name"] for a in json.loads(done.stdout)["agents"]] == ["demo", "scout"]
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "pydantic" not in loaded and "plane.wire.protocol" not in loaded
    assert "asyncio" not in loaded and "ssl" not in loaded
    assert "plane.wire.once" in loaded


def test_version_and_the_compressor_without_a_plane(tmp_path: Path) -> None:
    version = plane_process(tmp_path, "--version")
    assert version.returncode == 0 and re.fullmatch(r"plane \S+\n", version.stdout)
    original = "".join(f"a line {n}\n" for n in range(400))
    compressed = plane_process(tmp_path, "compress", stdin=original)
    assert compressed.returncode == 0, compressed.stderr
    [ref] = re.findall(r"ref:(k_[\w-]{10})", compressed.stdout)
    expanded = plane_process(tmp_path, "expand", stdin=compressed.stdout)
    assert (expanded.returncode, expanded.stdout) == (0, original)
    retrieved = plane_process(tmp_path, "retrieve", ref, "--lines", "1:1")
    assert (retrieved.returncode, retrieved.stdout) == (0, "a line 1\n")


def test_plane_alone_reports_a_daemon_that_could_not_start(tmp_path: Path) -> None:
    (tmp_path / "agents.yaml").write_text("agents:\n  demo:\n    limitusd: 2\n")
    result = plane_process(tmp_path / "home", cwd=tmp_path, timeout=120)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "plane: The plane did not start: agents.yaml line 3: agents.demo.limitusd: unknown key "
        "(did you mean limitUsd?)."
    )


async def test_plane_alone_without_a_terminal_says_so_and_the_plane_runs_on(
    start_plane: StartPlane,
) -> None:
    """From a script, cron or `nohup` (its input at its end), the TUI would
    draw into the void and read nothing at full speed, a core for as long as
    it lived: `plane` says what it needs instead."""
    plane = await start_plane()
    done = await asyncio.to_thread(plane_process, plane.home.root, timeout=30)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == (
        "plane: The plane is running; the TUI needs a terminal: `plane status` shows the "
        "agents, `plane web` serves the TUI to a browser."
    )
    assert done.stdout == ""
    status = await asyncio.to_thread(plane_process, plane.home.root, "status")
    assert status.returncode == 0 and "demo" in status.stdout, status.stderr


def test_plane_aimed_elsewhere_without_a_terminal_says_so(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(0.1)
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        done = plane_process(tmp_path, "--tcp", address, "--token", "t", timeout=30)
        with pytest.raises(TimeoutError):
            listener.accept()  # nothing dialled the plane
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == (
        "plane: The TUI needs a terminal: `plane status` shows the agents, `plane web` "
        "serves the TUI to a browser."
    )


def test_serve_says_its_config_its_addresses_and_that_it_stopped(tmp_path, scripted_llm):
    config = tmp_path / "agents.yaml"
    config.write_text(CONFIG.replace("{base_url}", scripted_llm.base_url))
    home = tmp_path / "home"
    process = subprocess.Popen(
        [sys.executable, "-m", "plane", "serve", "--config", str(config), "--tcp", "127.0.0.1:0"],
        env={**os.environ, "PLANE_HOME": str(home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said = until_serving(process)
        started = re.fullmatch(
            rf"plane: serving on {re.escape(str(home))}/plane\.sock and 127\.0\.0\.1:(\d+) "
            rf"\(token in {re.escape(str(home))}/token\); 2 agents \(demo, scout\)",
            said[-1],
        )
        assert started, said
        assert said[0] == f"plane: config from {config}"
        port = int(started.group(1))
        assert port != 0
        socket.create_connection(("127.0.0.1", port), timeout=5).close()  # it is listening there
    finally:
        process.terminate()
        _, rest = process.communicate(timeout=30)
    assert process.returncode == 0
    assert rest.splitlines()[-1] == "plane: stopped"
    logged = (home / "plane.log").read_text().splitlines()
    assert [line.split(" INFO ", 1)[1] for line in logged if " INFO " in line] == [
        f"plane: config from {config}",
        said[-1].replace("plane: ", "plane.daemon.server: ", 1),
        "plane: stopped",
    ]


def until_serving(process: subprocess.Popen[str]) -> list[str]:
    """stderr's lines up to and including the start line."""
    lines: list[str] = []
    assert process.stderr is not None
    while not lines or " serving on " not in lines[-1]:
        line = process.stderr.readline()
        assert line, f"the plane exited: {lines}"
        lines.append(line.rstrip("\n"))
    return lines
