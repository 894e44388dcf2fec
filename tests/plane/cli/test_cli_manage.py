"""Managing agents with the real `plane` command against a real daemon:
pause/resume, edit, rename, show, log, delete, interrupt; `plane --tcp` for
every client command (a refused token is one line); `plane ledger` with no
plane running; `--version`."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from plane.wire.protocol import Usage
from tests.support.command import Ran, one_line, plane_cli
from tests.support.fixtures_plane import CONFIG
from tests.support.served import served

ROOMY = CONFIG.replace("limitUsd: 1", "limitUsd: 9")


@pytest.fixture
def daemon(tmp_path, scripted_llm):
    """A real plane on the socket and on TCP; yields (home, port)."""
    home = tmp_path / "home"
    with served(roomy_config(tmp_path, scripted_llm), home, tcp=("127.0.0.1", 0)) as plane:
        yield home, plane.tcp_port


def roomy_config(tmp_path: Path, scripted_llm) -> Path:
    config = tmp_path / "agents.yaml"
    config.write_text(ROOMY.replace("{base_url}", scripted_llm.base_url))
    return config


def ok(result: Ran) -> list[str]:
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_pause_edit_rename_show_log_and_delete(daemon):
    home, _ = daemon
    ok(plane_cli(home, "new", "poet", "--model", "scripted-model", "--role", "writes verse"))
    assert ok(plane_cli(home, "pause", "poet")) == [
        "Paused poet: it takes no new turn until `plane resume poet`."
    ]
    ok(plane_cli(home, "send", "poet", "a haiku please"))
    assert ok(plane_cli(home, "edit", "poet", "--tools", "read_file,grep", "--limit", "2")) == [
        "Edited poet.",
        "  model      scripted-model (scripted)",
        "  role       writes verse",
        "  tools      read_file, grep",
        "  ceiling    $2.00 a day · paused",
    ]
    bad = plane_cli(home, "edit", "poet", "--model", "gpt-9", "--role", "x")
    assert bad.returncode == 1
    assert one_line(bad).startswith("plane: 'gpt-9' is not a configured model")
    ok(plane_cli(home, "rename", "poet", "bard"))

    shown = ok(plane_cli(home, "show", "bard"))
    assert shown[0] == "bard (made at run time)"
    assert "  role       writes verse" in shown, "the bad edit changed nothing"
    assert "  ceiling    $2.00 a day, from /limit · paused" in shown
    assert "  today      $0.00 spent · paused · 1 waiting" in shown
    assert shown[-1] == "  bookings   none"
    file_agent = ok(plane_cli(home, "show", "demo"))
    assert file_agent[0] == "demo (from agents.yaml)"
    assert "  ceiling    $9.00 a day, from defaults" in file_agent

    log = ok(plane_cli(home, "log", "bard", "-n", "3"))
    assert [re.sub(r"^\S+ \S+ ", "", line) for line in log] == [
        "plane  poet is paused: it takes no turn until it is resumed (p in the TUI, `plane "
        "resume poet`), and answers then what waited. Its ceiling is kept.",
        "plane  Edited by the operator: tools: read_file, grep; ceiling $2.00 a day.",
        "plane  Renamed from poet by the operator.",
    ]

    assert ok(plane_cli(home, "resume", "bard")) == ["Resumed bard."]
    refused = plane_cli(home, "delete", "bard")  # no terminal to confirm on
    assert refused.returncode == 1 and "needs --yes" in one_line(refused)
    assert ok(plane_cli(home, "delete", "bard", "--yes")) == [
        "Deleted bard; its conversation and ledger rows are kept."
    ]
    gone = plane_cli(home, "show", "bard")
    assert gone.returncode == 1
    assert one_line(gone) == "plane: No agent named 'bard'. `plane status` lists them."
    kept = ok(plane_cli(home, "log", "bard", "-n", "1"))  # its conversation is kept, and read
    assert "plane  Deleted by the operator. Its conversation and ledger rows are kept" in kept[0]
    never = plane_cli(home, "log", "nobody")
    assert one_line(never) == "plane: No agent named 'nobody'. `plane status` lists them."
    nobody = plane_cli(home, "delete", "nobody")  # said before any talk of --yes
    assert nobody.returncode == 1
    assert one_line(nobody) == "plane: No agent named 'nobody'. `plane status` lists them."


def on_a_terminal(home: Path, answer: bytes, *args: str) -> tuple[int, str]:
    """Run `plane ARGS` on a pseudo-terminal; type `answer` when it asks [y/N],
    and again every 2 s while it runs, as a person would: a ctrl+c that lands
    between the prompt's write and the read that follows it is held by
    Python until that read returns (input()'s own race, widest under load)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the command, as a person runs it
        # A shell's ctrl+c interrupts it, whatever the test run was started
        # with: a suite run in the background by a script (`cmd &`) has
        # SIGINT ignored, and an exec'd process keeps that.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.environ["PLANE_HOME"] = str(home)
        os.execv(sys.executable, [sys.executable, "-m", "plane", *args])
    said, typed_at = b"", None
    deadline = time.monotonic() + 60  # a command that never ends fails here, not hangs
    while time.monotonic() < deadline:
        if typed_at is not None and time.monotonic() - typed_at > 2:
            os.write(fd, answer)
            typed_at = time.monotonic()
        if not select.select([fd], [], [], 0.5)[0]:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the command ended: the terminal is gone
            break
        said += chunk
        if b"[y/N]" in said and typed_at is None:
            os.write(fd, answer)
            typed_at = time.monotonic()
    else:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), said.decode(errors="replace")


def test_new_and_edit_take_the_same_tool_words(daemon):
    home, _ = daemon
    ok(plane_cli(home, "new", "poet", "--model", "scripted-model", "--tools", "read-only"))
    assert "  tools      read-only: read_file, list_files, grep, retrieve, budget_status" in ok(
        plane_cli(home, "show", "poet")
    )
    ok(plane_cli(home, "edit", "poet", "--tools", "all"))
    edited = ok(plane_cli(home, "edit", "poet", "--tools", "read-only"))
    assert "  tools      read-only: read_file, list_files, grep, retrieve, budget_status" in edited
    assert "(or all, read-only, or none; an MCP server's as server.tool or server.*)." in one_line(
        plane_cli(home, "edit", "poet", "--tools", "x")
    )


@pytest.mark.slow  # a terminal is a process's own: the command runs as a user runs it
def test_delete_s_question_takes_ctrl_d_as_no_and_ctrl_c_as_ctrl_c(daemon):
    home, _ = daemon
    ok(plane_cli(home, "new", "poet", "--model", "scripted-model"))
    code, said = on_a_terminal(home, b"\x04", "delete", "poet")  # ctrl+d
    assert code == 1 and said.endswith("[y/N] \r\nNothing deleted.\r\n"), said
    code, said = on_a_terminal(home, b"\x03", "delete", "poet")  # ctrl+c
    assert code == 130 and "plane:" not in said, (code, said)
    assert ok(plane_cli(home, "show", "poet"))[0] == "poet (made at run time)"


def test_interrupt_from_the_command_line(daemon, scripted_llm):
    home, _ = daemon
    scripted_llm.stall("Half an ans", seconds=30)
    ok(plane_cli(home, "send", "demo", "a long one"))
    deadline = time.monotonic() + 20
    while not scripted_llm.received:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.2)  # the stream has begun
    assert ok(plane_cli(home, "interrupt", "demo")) == [
        "Interrupted demo's turn; its conversation says what it cost."
    ]
    last = ok(plane_cli(home, "log", "demo", "-n", "1"))[0]
    assert "plane  Interrupted by the operator. The cut-off turn cost $" in last
    idle = plane_cli(home, "interrupt", "demo")
    assert one_line(idle) == "plane: demo is not taking a turn: there is nothing to interrupt."


def test_every_client_command_over_tcp(daemon, scripted_llm):
    home, port = daemon
    token = (home / "token").read_text().strip()
    elsewhere = Path(os.environ.get("TMPDIR", "/tmp")) / "no-such-plane-home"
    scripted_llm.reply("over the wire", usage=Usage(input_tokens=10))
    remote = ("--tcp", f"127.0.0.1:{port}", "--token", token)
    # Another home (none there): everything goes to TCP.
    assert ok(plane_cli(elsewhere, *remote, "send", "demo", "hi", "--wait"))[0] == "over the wire"
    assert "demo" in ok(plane_cli(elsewhere, *remote, "status"))[1]
    assert ok(plane_cli(elsewhere, *remote, "show", "demo"))[0] == "demo (from agents.yaml)"
    assert len(ok(plane_cli(elsewhere, *remote, "ledger", "--csv"))) == 2

    wrong = plane_cli(elsewhere, "--tcp", f"127.0.0.1:{port}", "--token", "guess", "status")
    assert wrong.returncode == 1
    assert one_line(wrong) == (
        "plane: Wrong or missing token; it is in the plane's home, in the file `token`."
    )
    # One token in 64 begins with `-`: it is still the token, not an option.
    dashed = plane_cli(elsewhere, "--tcp", f"127.0.0.1:{port}", "--token", "-guess", "status")
    assert one_line(dashed) == one_line(wrong)


def test_the_ledger_is_read_without_a_plane(tmp_path, scripted_llm):
    home = tmp_path / "home"
    nothing = plane_cli(home, "ledger")
    assert nothing.returncode == 1
    assert one_line(nothing) == f"plane: No ledger in {home} yet: no plane has run there."

    with served(roomy_config(tmp_path, scripted_llm), home):
        scripted_llm.reply("spent", usage=Usage(input_tokens=100, output_tokens=10))
        ok(plane_cli(home, "send", "demo", "spend", "--wait"))
        running = ok(plane_cli(home, "ledger", "--csv"))
    before = (home / "plane.db").read_bytes()
    stopped = ok(plane_cli(home, "ledger", "--csv"))
    assert stopped == running and len(stopped) == 2
    assert ok(plane_cli(home, "ledger"))[0].endswith("(UTC): 1 call, $0.12")
    assert (home / "plane.db").read_bytes() == before, "read-only: nothing written"


def test_the_ledger_read_without_a_plane_has_every_count(tmp_path, scripted_llm):
    """Offline, a call reads as the plane itself reads it: the 1-hour cache
    writes too (the offline reader once had its own copy, without them)."""
    home = tmp_path / "home"
    with served(roomy_config(tmp_path, scripted_llm), home):
        scripted_llm.reply("spent", usage=Usage(input_tokens=100, output_tokens=10))
        ok(plane_cli(home, "send", "demo", "spend", "--wait"))
    with sqlite3.connect(home / "plane.db") as db:  # as an Anthropic call would have it
        db.execute("UPDATE calls SET cache_write_tokens = 40, cache_write_1h_tokens = 30")
    [call] = json.loads("\n".join(ok(plane_cli(home, "ledger", "--json"))))["calls"]
    assert (call["cache_write_tokens"], call["cache_write_1h_tokens"]) == (40, 30)


def test_version_and_a_token_without_tcp(tmp_path):
    assert re.fullmatch(r"plane \S+", ok(plane_cli(tmp_path, "--version"))[0])
    alone = plane_cli(tmp_path, "--token", "t", "status")
    assert alone.returncode == 2, "a bad command line (the README: exit 2)"
    assert one_line(alone) == (
        "plane: --token goes with --tcp HOST:PORT (on the socket it is read) (see `plane --help`)."
    )


@pytest.mark.parametrize(
    "command", ["delete", "pause", "resume", "rename", "edit", "interrupt", "show", "log"]
)
def test_every_new_command_has_help(command, tmp_path):
    result = plane_cli(tmp_path, command, "--help")
    assert result.returncode == 0 and "usage: plane" in result.stdout


@pytest.mark.parametrize("args", [["key", "demo"], ["gateway", "env", "demo", "--client", "codex"]])
def test_with_no_config_a_refusal_says_where_it_looked(tmp_path, args):
    xdg = tmp_path / "xdg"
    result = plane_cli(tmp_path / "home", *args, cwd=tmp_path, env={"XDG_CONFIG_HOME": str(xdg)})
    assert result.returncode == 1
    assert one_line(result).endswith(
        f"(No agents.yaml was found: looked in {tmp_path}/agents.yaml or {xdg}/plane/agents.yaml.)"
    )
