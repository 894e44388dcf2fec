"""run_command, with real subprocesses."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from plane.tools import shell
from tests.support.processes import running

from .conftest import FakeContext, Run

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="process checks read /proc")


def _none_running(text: str, within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not running(text, at_start=True):
            return True
        time.sleep(0.02)
    return False


FRAME = re.compile(
    r"^\$ (?P<command>.*?)\n(?P<output>.*)\[(?P<status>[^\]]*) · (?P<secs>\d+\.\d\d)s\]$", re.S
)


async def test_output_exit_code_and_time_come_in_a_fixed_frame(run: Run):
    result = await run("run_command", command="echo hello; echo oops >&2; exit 3")
    assert result.ok
    frame = FRAME.match(result.text)
    assert frame, result.text
    assert frame["command"] == "echo hello; echo oops >&2; exit 3"
    assert frame["output"] == "hello\noops\n"
    assert frame["status"] == "exit 3"
    assert float(frame["secs"]) < 5


async def test_the_workspace_is_the_working_directory_and_home(run: Run, workspace: Path):
    result = await run("run_command", command='pwd; echo "$HOME"; touch made-here')
    assert result.text.splitlines()[1:3] == [str(workspace), str(workspace)]
    assert (workspace / "made-here").exists()


async def test_no_output_still_gets_a_frame(run: Run):
    result = await run("run_command", command="true")
    assert re.fullmatch(r"\$ true\n\[exit 0 · \d+\.\d\ds\]", result.text)


async def test_output_without_a_final_newline_keeps_the_status_on_its_own_line(run: Run):
    result = await run("run_command", command="printf abc")
    assert result.text.startswith("$ printf abc\nabc\n[exit 0 · ")


async def test_stdin_is_closed(run: Run):
    result = await run("run_command", command="cat; echo done", timeout_s=5)
    assert result.ok
    assert "done\n[exit 0" in result.text


async def test_secrets_in_the_planes_environment_do_not_reach_the_command(
    run: Run, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-should-not-leak")
    result = await run("run_command", command="env")
    assert "sk-should-not-leak" not in result.text
    assert "PATH=" in result.text
    assert "NO_COLOR=1" in result.text


async def test_a_timeout_kills_the_whole_process_tree(run: Run, workspace: Path):
    started = time.monotonic()
    result = await run(
        "run_command",
        command="sleep 60.101 & echo started; setsid -f sleep 60.102; sleep 60",
        timeout_s=1,
    )
    assert time.monotonic() - started < 30  # far under the sleeps: killed, not waited for
    assert not result.ok
    assert result.text.startswith(
        "$ sleep 60.101 & echo started; setsid -f sleep 60.102; sleep 60\nstarted\n"
    )
    assert "[killed: timed out after 1s · " in result.text
    assert _none_running("sleep 60.10")


async def test_background_processes_end_with_the_command(run: Run, workspace: Path):
    started = time.monotonic()
    result = await run("run_command", command="sleep 60.201 & echo back")
    assert time.monotonic() - started < 30  # the background sleep does not hold the pipe open
    assert result.ok and "back\n[exit 0" in result.text
    assert _none_running("sleep 60.201")


async def test_a_process_that_leaves_the_session_ends_with_the_command_too(run: Run):
    started = time.monotonic()
    command = "setsid -f sleep 60.301; (setsid sleep 60.302 &); echo back"
    result = await run("run_command", command=command)
    assert time.monotonic() - started < 30  # far under the sleeps: killed, not waited for
    assert result.ok and "back\n" in result.text
    assert _none_running("sleep 60.30")


async def test_a_signal_is_reported_by_name(run: Run):
    result = await run("run_command", command="kill -SEGV $$")
    assert result.ok
    assert "[killed by SIGSEGV · " in result.text


async def test_huge_output_is_capped_with_its_start_and_end(run: Run):
    result = await run("run_command", command="seq 1 200000; echo the-end")
    assert result.ok
    assert len(result.text.encode()) < shell.OUTPUT_CAP + 200
    body = result.text.split("\n", 1)[1]
    assert body.startswith("1\n2\n3\n")
    assert "the-end\n[exit 0 · " in body
    marker = re.search(r"\[… ([\d,]+) bytes \(([\d,]+) lines\) cut from the middle …\]", body)
    assert marker
    shown_numbers = [line for line in body.splitlines() if line.isdigit()]
    assert int(marker[2].replace(",", "")) == 200_000 - len(shown_numbers)


async def test_cancelling_the_turn_kills_the_command(ctx: FakeContext, workspace: Path):
    import asyncio

    from plane.tools import registry

    command = "setsid -f sleep 60.401; sleep 60.402"
    task = asyncio.create_task(
        registry.call("run_command", json.dumps({"command": command, "timeout_s": 60}), ctx)
    )
    for _ in range(500):
        if len(running("sleep 60.40", at_start=True)) == 2:
            break
        await asyncio.sleep(0.01)
    assert len(running("sleep 60.40", at_start=True)) == 2
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _none_running("sleep 60.40")


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"command": ""}, "`command` should have at least 1 character"),
        ({"command": "true", "timeout_s": 601}, "`timeout_s` should be less than or equal to 600"),
        ({"command": "true", "timeout_s": 0}, "`timeout_s` should be greater than or equal to 1"),
        ({"command": "true", "cwd": "/"}, "`cwd` is not an argument of run_command"),
        ({}, "`command` is required"),
    ],
)
async def test_bad_arguments_are_refused_with_the_argument_named(run: Run, arguments, says):
    result = await run("run_command", **arguments)
    assert not result.ok
    assert says in result.text
