"""`plane stop` returns when the plane has stopped, and while it stops every
command says so: against a real daemon process, stopped by `plane stop` run as
a user runs it (one process stops another: what the lock and the socket say
between them); the commands asked meanwhile run in the test's process, another
than the daemon's, so the daemon's grace is not spent on their Python starts."""

import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.answering import until_it_answers
from tests.support.command import plane_cli, plane_process
from tests.support.fixtures_plane import CONFIG
from tests.support.scripted_llm import Reply, ScriptedLLM

IN_FLIGHT_S = 12.0
"""How long the scripted model takes to answer: longer than the plane's 10 s
grace for turns in flight, so a stop takes the whole grace."""


def serve(home: Path, config: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PLANE_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "plane", "serve", "--config", str(config)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def config(tmp_path: Path, scripted_llm: ScriptedLLM) -> Path:
    path = tmp_path / "agents.yaml"
    path.write_text(CONFIG.replace("{base_url}", scripted_llm.base_url))
    return path


@pytest.mark.slow
def test_stop_waits_and_every_command_agrees_while_it_stops(tmp_path, config, scripted_llm):
    home = tmp_path / "home"
    daemon = serve(home, config)
    try:
        until_it_answers(home, daemon)
        scripted_llm.default_reply = Reply("slow answer", delay_s=IN_FLIGHT_S)
        assert plane_process(home, "send", "demo", "take your time").returncode == 0
        deadline = time.monotonic() + 10
        while not scripted_llm.requests:  # the turn is in flight: the stop waits for it
            assert time.monotonic() < deadline, "the turn never reached the model"
            time.sleep(0.05)

        with ThreadPoolExecutor() as pool:
            stopping = pool.submit(plane_process, home, "stop")
            until_the_socket_refuses(home)
            # While the turn holds the stop up for the plane's 10 s grace: in
            # this process, where a command costs what it does, not a Python
            # start and its imports (seconds each on a busy machine, and three
            # of them could outlast the grace).
            status = plane_cli(home, "status")
            second = plane_cli(home, "serve", "--config", str(config))
            impatient = plane_cli(home, "stop", "--timeout", "0.2")
            assert not stopping.done(), "`plane stop` returned before the plane had stopped"
            stopped = stopping.result()
        assert (status.returncode, status.stderr) == (
            1,
            f"plane: The plane in {home} is stopping.\n",
        )
        assert second.returncode == 1
        assert second.stderr.splitlines()[-1] == (
            f"plane: The plane in {home} is still stopping; `plane stop` waits until it has."
        )
        assert impatient.returncode == 1
        assert impatient.stderr.startswith("plane: The plane is still stopping after 0.2s")
        assert (stopped.returncode, stopped.stdout) == (0, "The plane has stopped.\n"), stopped
        assert not (home / "plane.sock").exists()
        assert daemon.wait(timeout=5) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    after = plane_process(home, "status")
    assert after.returncode == 1 and "No plane is running" in after.stderr

    again = serve(home, config)  # `plane stop && plane serve`: the home is free
    try:
        until_it_answers(home, again)
        told = plane_process(home, "stop", "--no-wait")
        assert (told.returncode, told.stdout) == (0, "The plane is stopping.\n"), told.stderr
        assert again.wait(timeout=20) == 0
    finally:
        if again.poll() is None:
            again.kill()
            again.wait()


def until_the_socket_refuses(home: Path) -> None:
    """The plane has stopped listening: its stop has begun."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_UNIX) as probe:
            try:
                probe.connect(str(home / "plane.sock"))
            except OSError:
                return
        time.sleep(0.02)
    raise AssertionError("the plane never stopped listening")


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_a_stop_timeout_that_is_no_time_is_refused(tmp_path, value):
    said = plane_cli(tmp_path / "home", "stop", "--timeout", value)
    assert said.returncode == 2 and "wants a number of seconds over 0" in said.stderr
    assert "Traceback" not in said.stderr
