"""The `plane` command's words and exit codes, run by its `main` in the test's
process (tests/support/command.py) against a real plane on its real socket,
the scripted LLM server over real HTTP. Each command's own process:
test_smoke.py."""

import asyncio
import fcntl
import json
import os
import pty
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from plane.clock import day_of, midnight_after
from plane.store.sqlite import SqliteDatabase
from plane.wire.protocol import (
    ConversationMessage,
    HelloReply,
    SendReply,
    Snapshot,
    SnapshotReply,
    Usage,
    encode,
)
from tests.support.answering import answers
from tests.support.command import (
    Ran,
    one_line,
    plane_cli,
    plane_cli_async,
    plane_serve_until_it_answers,
    process_environment,
)
from tests.support.cpu import REFUSAL_CPU_S, cpu_limit, out_of_cpu
from tests.support.fixtures_plane import CONFIG


async def test_send_status_and_ledger(start_plane):
    plane = await start_plane()
    home = plane.home.root
    plane.llm.reply("Hello from the model.", usage=Usage(input_tokens=100, output_tokens=10))
    sent = await plane_cli_async(home, "send", "demo", "hello", "--wait")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.splitlines() == ["Hello from the model.", "  $0.12 · 100 in · 10 out"]

    status = json.loads((await plane_cli_async(home, "status", "--json")).stdout)
    demo = next(a for a in status["agents"] if a["name"] == "demo")
    assert (demo["spend_today_usd"], demo["limit_usd"], demo["state"]) == ("0.12", "1", "idle")

    ledger = json.loads((await plane_cli_async(home, "ledger", "--json")).stdout)
    [call] = ledger["calls"]
    assert (call["input_tokens"], call["output_tokens"], call["cost_usd"]) == (100, 10, "0.12")
    assert call["status"] == "settled" and "scripted-model" in call["price_source"]

    csv = (await plane_cli_async(home, "ledger", "--csv")).stdout.splitlines()
    assert csv[0].startswith("id,agent,day,at,provider,model") and len(csv) == 2


async def test_status_says_what_a_new_agent_gets_and_when_a_held_agent_resumes(start_plane):
    plane = await start_plane()
    home = plane.home.root
    plane.llm.reply("Done.", usage=Usage(input_tokens=100, output_tokens=10))
    assert (await plane_cli_async(home, "send", "demo", "work", "--wait")).returncode == 0
    held = await plane_cli_async(home, "send", "demo", "/limit 0.10")  # $0.12 spent: over it
    assert held.stdout.startswith("Spending limit set to $0.10 a day.")

    status = json.loads((await plane_cli_async(home, "status", "--json")).stdout)
    assert (status["default_model"], status["default_limit_usd"]) == ("scripted-model", "1")
    agents = {a["name"]: a for a in status["agents"]}
    assert agents["demo"]["state"] == "held"
    resumes_at = datetime.fromisoformat(agents["demo"]["resumes_at"])
    assert resumes_at == midnight_after(day_of(plane.clock.now()))
    assert agents["scout"]["resumes_at"] is None

    text = (await plane_cli_async(home, "status")).stdout.splitlines()
    demo = next(line for line in text if line.startswith("  demo "))
    scout = next(line for line in text if line.startswith("  scout "))
    assert (
        demo == "  demo   held     scripted-model  $0.12 of $0.10  its ceiling: resumes in 12h 00m"
    ), demo
    assert scout == "  scout  idle     scripted-model  $0.00 of $1.00"


async def test_limit_from_the_command_line(start_plane):
    plane = await start_plane()
    lines, codes = {}, {}
    for typed in ("/limit", "/limit 5", "/limit off", "/limit abc", "/limt 5"):
        result = await plane_cli_async(plane.home.root, "send", "demo", typed)
        lines[typed], codes[typed] = result.stdout.strip(), result.returncode
    assert lines == {
        "/limit": "$0.00 spent today, of $1.00 a day.",
        "/limit 5": "Spending limit set to $5.00 a day. $0.00 spent today, of $5.00 a day.",
        "/limit off": "Spending limit removed. $0.00 spent today, against no limit.",
        "/limit abc": "abc is not an amount. Use /limit 5, /limit $0.25 or /limit off.",
        "/limt 5": "/limt is not a command. Commands: /limit, /new, /help.",
    }
    # A script can tell a refused command from one that took: 1, as for any refusal.
    assert codes == {"/limit": 0, "/limit 5": 0, "/limit off": 0, "/limit abc": 1, "/limt 5": 1}
    status = json.loads((await plane_cli_async(plane.home.root, "status", "--json")).stdout)
    assert next(a for a in status["agents"] if a["name"] == "demo")["limit_usd"] is None


ASKED_FOR_MORE = (
    "This agent asked for a ceiling of $50.00 a day, which is above the $5.00 it has. "
    "It can ask to be held to less, never to more: /limit $50.00, if you meant it."
)


async def test_an_agents_ask_for_more_reads_as_the_spec_writes_it(start_plane):
    """DESIGN.md's scene at the command line: `‹ask› /limit 50`, then the
    refusal that hands the operator the line to type, in `send --wait` as in
    `plane log`."""
    plane = await start_plane()
    home = plane.home.root
    assert (await plane_cli_async(home, "send", "demo", "/limit 5")).returncode == 0
    plane.llm.reply("", tool_calls=[("set_own_limit", {"usd": "50"})], usage=Usage())
    plane.llm.reply("Asked.", usage=Usage())
    sent = await plane_cli_async(home, "send", "demo", "pace yourself", "--wait")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.splitlines()[:2] == ["‹ask› /limit 50", ASKED_FOR_MORE]
    log = (await plane_cli_async(home, "log", "demo")).stdout.splitlines()
    said = [line.split(" ", 2)[2] for line in log]  # past the date and the time
    assert said[3:5] == ["‹ask›  /limit 50", f"plane  {ASKED_FOR_MORE}"], log


@pytest.mark.parametrize("typed", [" /limit 0", "\n/limit 0 ", "\t/limit 0"])
async def test_a_limit_after_blank_space_is_the_command_as_the_tui_sends_it(start_plane, typed):
    """The TUI trims what it sends; a script's `plane send demo " /limit 0"`
    must not reach the model as a message, spend, and leave the ceiling."""
    plane = await start_plane()
    result = await plane_cli_async(plane.home.root, "send", "demo", typed)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Spending limit set to $0.00 a day.")
    status = json.loads((await plane_cli_async(plane.home.root, "status", "--json")).stdout)
    assert next(a for a in status["agents"] if a["name"] == "demo")["limit_usd"] == "0"
    assert plane.llm.requests == [], "never sent to the model"


async def test_new_agent_and_stop(start_plane):
    plane = await start_plane()
    home = plane.home.root
    serving = plane.serve_until_told_to_stop()
    new = ("new", "helper", "--model", "other-model")
    created = await plane_cli_async(home, *new, "--role", "be brief")
    assert created.stdout.splitlines()[0] == (
        "Created helper on other-model, $1.00 a day, every tool."
    )
    taken = await plane_cli_async(home, *new)
    assert taken.returncode == 1 and "already exists" in taken.stderr
    stopped = await plane_cli_async(home, "stop")
    assert (stopped.returncode, stopped.stdout) == (0, "The plane has stopped.\n")
    await asyncio.wait_for(serving, 5)  # it had stopped, as it said
    assert not await asyncio.to_thread(answers, home)


async def test_new_takes_the_default_model_and_the_tools_asked_for(start_plane):
    plane = await start_plane()
    home = plane.home.root
    plain = await plane_cli_async(home, "new", "poet")  # defaults.model, and what suits it
    assert plain.stdout.strip() == "Created poet on scripted-model, $1.00 a day, every tool."
    reader = await plane_cli_async(home, "new", "reader", "--tools", "read-only")
    assert reader.stdout.strip() == (
        "Created reader on scripted-model, $1.00 a day, read-only tools "
        "(read_file, list_files, grep, retrieve, budget_status)."
    )
    bare = await plane_cli_async(home, "new", "bare", "--model", "other-model", "--tools", "none")
    assert bare.stdout.splitlines()[0] == "Created bare on other-model, $1.00 a day, no tools."


UNPRICED_HELD = (
    "helper is not answering: no price is known for other-model, and an agent under a ceiling"
    " takes no turn it cannot count. Add the model under `pricing:` in agents.yaml, or remove"
    " the limit with /limit off."
)
"""What the plane says in the conversation when it holds such an agent."""


async def test_new_on_a_model_with_no_price_under_a_ceiling_says_it_takes_no_turn(start_plane):
    """Created, under the default ceiling, on a model with no known price: it
    takes no turn until the model has a price, said at once in the words the
    plane holds it with, not learnt from the first message left unanswered;
    on the command line, with the command line's way to remove the limit
    (`/limit off` is typed in its conversation)."""
    plane = await start_plane()
    created = await plane_cli_async(plane.home.root, "new", "helper", "--model", "other-model")
    assert created.returncode == 0, created.stderr
    assert created.stdout.splitlines() == [
        "Created helper on other-model, $1.00 a day, every tool.",
        UNPRICED_HELD.replace("/limit off", "`plane edit helper --limit off`"),
    ]
    said = await plane.send("helper", "hello")
    assert said[-1].text == UNPRICED_HELD, "the conversation's sentence, word for word"
    edited = await plane_cli_async(plane.home.root, "edit", "helper", "--limit", "off")
    assert edited.returncode == 0, edited.stderr  # the command it gave is one that works


async def test_new_on_a_model_with_no_price_and_no_ceiling_adds_nothing(start_plane):
    """No ceiling: it takes turns, its calls counted unpriced; nothing more to say."""
    plane = await start_plane(CONFIG.replace("  limitUsd: 1\n", ""))
    created = await plane_cli_async(plane.home.root, "new", "helper", "--model", "other-model")
    assert created.stdout.splitlines() == ["Created helper on other-model, no limit, every tool."]


def test_clear_errors_when_no_plane_runs(tmp_path):
    result = plane_cli(tmp_path, "status")
    assert result.returncode == 1
    assert result.stderr.startswith("plane: No plane is running at ")
    assert "Traceback" not in result.stderr


def test_a_bad_config_stops_the_plane_before_it_starts(tmp_path):
    config = tmp_path / "agents.yaml"
    config.write_text("defaults:\n  limitUsd: 5\nagents:\n  demo:\n    limitUsd: 9\n")
    result = plane_cli(tmp_path / "home", "serve", "--config", str(config))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"plane: {config} line 5: agents.demo.limitUsd: $9.00 is above defaults.limitUsd "
        "$5.00; an agent's own block can only narrow the default."
    )
    assert not (tmp_path / "home" / "plane.sock").exists()


@pytest.mark.parametrize("command", ["serve", "stop", "status", "send", "ledger", "new"])
def test_every_command_has_help(command, tmp_path):
    result = plane_cli(tmp_path, command, "--help")
    assert result.returncode == 0 and "usage: plane" in result.stdout


# ── every failure is one line and an exit code ─────────────────────────────


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["send", "demo", "hi", "--wait", "--timeout", "-1"],
            "seconds over 0 (at most 604800), not '-1'",
        ),
        (["send", "demo", "hi", "--timeout", "0"], "seconds over 0 (at most 604800), not '0'"),
        (
            ["send", "demo", "hi", "--timeout", "5"],
            "--timeout is how long --wait waits; without it, nothing waits",
        ),
        (
            ["stop", "--no-wait", "--timeout", "5"],
            "--timeout is how long to wait; with --no-wait, nothing waits",
        ),
        (["send", "demo", "hi", "--timeout", "nan"], "seconds over 0 (at most 604800), not 'nan'"),
        (["send", "demo", "hi", "--timeout", "inf"], "seconds over 0 (at most 604800), not 'inf'"),
        (
            ["send", "demo", "hi", "--timeout", "soon"],
            "seconds over 0 (at most 604800), not 'soon'",
        ),
        (["send", "demo", ""], "argument text: the text is empty"),
        (["send", "demo", "  \n "], "argument text: the text is empty"),
        (["send", "", "hi"], "the agent name is empty"),
        (["send", "demo"], "the following arguments are required: text"),
        (
            ["send", "demo", "-x"],
            "required: text ('-x' was read as an option: put `--` before a value starting '-')",
        ),
        (["new", "--bad"], "required: name ('--bad' was read as an option"),
        (["send", "demo", "--wai"], "arguments are required: text (see"),
        (["send", "demo", "hi", "--bogus"], "plane send: no option '--bogus' (see"),
        (["send", "demo", "hi", "extra"], "unrecognized arguments: extra"),
        (["ledger", "--day", "2026-13-01"], "'2026-13-01' is not a day like 2026-11-29"),
        (["ledger", "--day", "yesterday"], "'yesterday' is not a day"),
        (["ledger", "--json", "--csv"], "not allowed with argument"),
        (["new", "x", "--tools", "some"], "argument --tools: invalid choice: 'some'"),
        (["new", "", "--model", "m"], "the name is empty"),
        (["new", "x", "--model", " "], "the model is empty"),
        (["serve", "--tcp", "7878"], "'7878' is not HOST:PORT"),
        (["serve", "--tcp", "127.0.0.1:99999"], "'127.0.0.1:99999' is not HOST:PORT"),
        (["serve", "--tcp", "127.0.0.1:-1"], "is not HOST:PORT"),
        (["serve", "--tcp", "127.0.0.1:٣"], "is not HOST:PORT"),
        (["serve", "--tcp"], "expected one argument"),
        (["--tcp", "127.0.0.1:0", "status"], "'127.0.0.1:0' has port 0, which only a listener"),
        (
            ["gateway", "env", "claude", "--client", "aider", "--http", "127.0.0.1:0"],
            "'127.0.0.1:0' has port 0, which only a listener can use",
        ),
        (
            ["gateway", "env", "claude", "--client", "aider", "--http", "7878"],
            "'7878' is not HOST:PORT, like 127.0.0.1:7878 (see",
        ),
        (["status", "--bogus"], "plane status: no option '--bogus' (see `plane status --help`)"),
        (["fly"], "plane: no command 'fly' (see `plane --help`)"),
        (["retrieve"], "the following arguments are required: ref"),
    ],
)
def test_a_bad_command_line_is_one_line_and_exit_2(tmp_path, args, expected):
    result = plane_cli(tmp_path, *args)
    assert result.returncode == 2, result.stderr
    line = one_line(result)
    assert expected in line
    assert line.startswith("plane") and line.endswith("--help`).")
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["stauts"], "plane: no command 'stauts' (did you mean status?)"),
        (["ledgr", "--json"], "plane: no command 'ledgr' (did you mean ledger?)"),
        (["gateway", "evn"], "plane gateway: no command 'evn' (did you mean env?)"),
        (["status", "--jsno"], "plane status: no option '--jsno' (did you mean --json?)"),
        (["status", "--jsno=1"], "plane status: no option '--jsno' (did you mean --json?)"),
        (["stop", "--timout", "3"], "plane stop: no option '--timout' (did you mean --timeout?)"),
        (["send", "demo", "hi", "--wiat"], "plane send: no option '--wiat' (did you mean --wait?)"),
        # a mistyped option with a value: its value is not taken for the command
        (["--tcpp", "127.0.0.1:7878", "status"], "plane: no option '--tcpp' (did you mean --tcp?)"),
        (["--tcpp=127.0.0.1:7878", "status"], "plane: no option '--tcpp' (did you mean --tcp?)"),
        (["--tokn", "t", "status"], "plane: no option '--tokn' (did you mean --token?)"),
        (["-x", "x", "status"], "plane: no option '-x' (see `plane --help`)."),
        (["send", "--timout", "5"], "plane send: no option '--timout' (did you mean --timeout?)"),
        (
            ["gateway", "env", "--clent", "codex", "demo"],
            "plane gateway env: no option '--clent' (did you mean --client?)",
        ),
    ],
)
def test_a_mistyped_command_or_option_is_one_line_naming_the_nearest(tmp_path, args, said):
    """Not the list of every command, nor "unrecognized arguments" alone."""
    result = plane_cli(tmp_path, *args)
    assert result.returncode == 2
    assert result.stderr == f"{said}\n"
    assert result.stdout == ""


def test_text_that_is_not_utf8_is_refused_before_it_is_sent(tmp_path):
    result = plane_cli(tmp_path, "send", "demo", os.fsdecode(b"caf\xe9"))  # as argv is read
    assert result.returncode == 2
    assert "argument text: the text is not valid UTF-8" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["status", "--json"],
        ["send", "demo", "hi", "--wait"],
        ["new", "x", "--model", "m"],
        ["show", "demo"],
        ["pause", "demo"],
    ],
)
def test_every_client_command_says_when_no_plane_runs(tmp_path, args):
    result = plane_cli(tmp_path, *args)
    assert result.returncode == 1
    assert one_line(result) == (
        f"plane: No plane is running at {tmp_path / 'plane.sock'}. Start one with `plane serve`."
    )


@pytest.mark.parametrize("args", [["status"], ["status", "--json"], ["show", "demo"]])
def test_no_plane_at_a_tcp_address_says_the_command_that_starts_one_there(tmp_path, args):
    """`--tcp HOST:PORT` with nothing listening: `plane serve` would start a
    plane on the socket, not there; `plane serve --tcp HOST:PORT` does."""
    with socket.socket() as bound:  # a port of this machine's that nothing listens on
        bound.bind(("127.0.0.1", 0))
        where = f"127.0.0.1:{bound.getsockname()[1]}"
        result = plane_cli(tmp_path, "--tcp", where, *args)
    assert result.returncode == 1
    assert one_line(result) == (
        f"plane: No plane is running at {where}. Start one with `plane serve --tcp {where}`."
    )


@pytest.mark.parametrize("socket_left", [False, True])
def test_stop_with_no_plane_says_there_is_nothing_to_stop(tmp_path, socket_left):
    """Not "Start one with `plane serve`": the operator asked for the opposite.
    The same with the socket a killed plane left behind."""
    if socket_left:
        with socket.socket(socket.AF_UNIX) as left:
            left.bind(str(tmp_path / "plane.sock"))
    result = plane_cli(tmp_path, "stop")
    assert result.returncode == 1
    assert one_line(result) == (
        f"plane: No plane is running at {tmp_path / 'plane.sock'}: nothing to stop."
    )


@pytest.mark.parametrize(
    "args", [["status"], ["send", "demo", "hi"], ["show", "demo"], ["ledger"], ["serve"]]
)
@pytest.mark.parametrize("below", [False, True])
def test_a_home_that_is_a_file_is_named_with_what_to_do(tmp_path, args, below):
    """`PLANE_HOME` set to a file, or below one: not a bare `Not a directory.`
    nor "cannot be made private (File exists)", which name neither what is
    wrong nor the fix; one sentence, whether a plane is asked or started."""
    file = tmp_path / "home"
    file.write_text("not a directory")
    home = file / "plane" if below else file
    result = plane_cli(home, *args)
    assert result.returncode == 1
    assert one_line(result) == (
        f"plane: The plane's home {home} is not a directory; set PLANE_HOME to a directory "
        "you own (or unset it for the default)."
    )


@pytest.mark.parametrize("kind", ["directory", "file"])
def test_a_socket_path_that_is_not_a_socket_is_one_line(tmp_path, kind):
    where = tmp_path / "plane.sock"
    where.mkdir() if kind == "directory" else where.write_text("x")
    result = plane_cli(tmp_path, "status")
    assert result.returncode == 1
    assert one_line(result).startswith("plane: ")


class FakePlane:
    """A Unix socket at the plane's place that misbehaves as told: `close`
    hangs up at once, `hello` answers the handshake and then hangs up,
    `garbage` answers the handshake with a line that is not a frame, `sent`
    takes a `send --wait`'s message and hangs up before any turn."""

    def __init__(self, path: Path, behaviour: str) -> None:
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen(8)
        self.behaviour = behaviour
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                if self.behaviour == "close":
                    continue
                hello = json.loads(conn.makefile("rb").readline())
                if self.behaviour == "garbage":
                    conn.sendall(b"\x00\xff not a frame\n")
                    time.sleep(0.5)
                    continue
                conn.sendall(encode(HelloReply(id=hello["id"], plane_version="0")))
                if self.behaviour == "sent":
                    self._take_the_message(conn)

    @staticmethod
    def _take_the_message(conn: socket.socket) -> None:
        lines = conn.makefile("rb")
        now = datetime.now(UTC)
        snapshot = Snapshot(day=now.date(), now=now, resets_at=now, agents=[], models=[])
        conn.sendall(
            encode(SnapshotReply(id=json.loads(lines.readline())["id"], snapshot=snapshot))
        )
        send = json.loads(lines.readline())
        said = ConversationMessage(id=1, agent="demo", at=now, kind="operator", text=send["text"])
        conn.sendall(encode(SendReply(id=send["id"], messages=[said])))

    def close(self) -> None:
        self.server.close()


HANG_UPS = [
    (behaviour, args)
    for behaviour in ("close", "hello", "garbage")
    for args in (["status"], ["send", "demo", "hi", "--wait"], ["ledger", "--json"], ["stop"])
    # Not `stop` after a welcome: a plane that is stopping may hang up before its
    # `ok`, so stop counts that as told, and (no lock held here) as stopped.
    if not (behaviour == "hello" and args == ["stop"])
]


@pytest.mark.parametrize(("behaviour", "args"), HANG_UPS)
def test_a_plane_that_hangs_up_is_one_line(tmp_path, behaviour, args):
    fake = FakePlane(tmp_path / "plane.sock", behaviour)
    try:
        result = plane_cli(tmp_path, *args)
    finally:
        fake.close()
    assert result.returncode == 1, result.stderr
    assert one_line(result).startswith("plane: ")


def test_a_plane_that_hangs_up_after_taking_the_message_is_not_said_to_be_absent(tmp_path):
    fake = FakePlane(tmp_path / "plane.sock", "sent")
    try:
        result = plane_cli(tmp_path, "send", "demo", "hi", "--wait")
    finally:
        fake.close()
    assert result.returncode == 1, result.stderr
    assert one_line(result) == (
        "plane: The plane closed the connection before demo answered (is it stopping?); the "
        "message is kept, and answered when the plane runs again."
    )


async def test_send_wait_that_times_out_says_so_in_one_line(start_plane):
    plane = await start_plane()
    plane.llm.reply("Too late.", delay_s=60)
    started = time.monotonic()
    wait = ("--wait", "--timeout", "0.5")
    result = await plane_cli_async(plane.home.root, "send", "demo", "hello", *wait)
    assert time.monotonic() - started < 30  # gave up; the answer is a minute away
    assert result.returncode == 124
    assert one_line(result) == (
        "plane: No answer from demo within 0.5s; its turn goes on (`plane status` shows it)."
    )


async def test_send_wait_to_an_agent_already_held_says_so_and_waits_for_nothing(start_plane):
    """The hold is told once a spell: the second message's reply carries no
    notice, and no turn is coming to wait for (never "its turn goes on")."""
    plane = await start_plane()
    home = plane.home.root
    assert (await plane_cli_async(home, "send", "demo", "/limit 0")).returncode == 0
    first = await plane_cli_async(home, "send", "demo", "one", "--wait", "--timeout", "20")
    assert first.returncode == 75 and "demo is paused" in first.stdout, "kept, not answered"
    started = time.monotonic()
    second = await plane_cli_async(home, "send", "demo", "two", "--wait", "--timeout", "20")
    assert time.monotonic() - started < 15, "it waited for a turn that is not coming"
    assert (second.returncode, second.stderr) == (75, "")
    assert second.stdout.splitlines() == [
        "demo is held: the message is kept, marked held, and answered when demo takes"
        " turns again (`plane log demo` says why)."
    ]
    assert plane.llm.requests == []


async def test_send_wait_to_an_agent_the_loop_guard_holds_mid_turn_says_why_and_exits_kept(
    start_plane,
):
    """The turn is cut at the fifth same read: the message waits for the
    operator's resume, so `--wait` ends as kept (75) with the guard's
    sentence, never a bare 1 with nothing said."""
    plane = await start_plane()
    workspace = plane.services.roster.get("demo").workspace
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "deploy.log").write_text("step 3 failed\n")
    read = ("read_file", {"path": "deploy.log"})
    for _ in range(5):
        plane.llm.reply("", tool_calls=[read], usage=Usage(input_tokens=10))
    sent = await plane_cli_async(
        plane.home.root, "send", "demo", "why did it fail?", "--wait", "--timeout", "20"
    )
    assert (sent.returncode, sent.stderr) == (75, ""), sent.stdout
    said = sent.stdout.splitlines()[-1]  # after the turn's cost line
    assert said.startswith(
        'demo is held: it called read_file {"path": "deploy.log"} 5 times in a row'
    ), sent.stdout
    assert said.endswith("(p in the TUI, `plane resume demo`), which lets it go on.")
    history = await plane.services.conversation.history("demo", 50)
    assert [m.text for m in history].count(said) == 1, "said once, not again after the turn"


UNPRICED_WHY = "an unpriced model under a ceiling: a price in agents.yaml or no ceiling frees it"
"""Why an agent on a model with no price is held, and what frees it."""


async def test_status_shows_an_unpriced_agents_spend_as_the_tui_does(start_plane):
    """`$?`, never `$0.00`: its calls are counted, not priced."""
    plane = await start_plane()
    home = plane.home.root
    assert (await plane_cli_async(home, "edit", "scout", "--model", "other-model")).returncode == 0
    text = (await plane_cli_async(home, "status")).stdout.splitlines()
    scout = next(line for line in text if line.startswith("  scout "))
    assert scout == "  scout  held     other-model (unpriced)  $? of $1.00  " + UNPRICED_WHY, scout


async def test_show_says_an_unpriced_agents_spend_as_status_does(start_plane):
    """`plane show` beside `plane status`: `$?` in both, never `$0.00 spent`
    for calls that were counted and not priced."""
    plane = await start_plane()
    home = plane.home.root
    assert (await plane_cli_async(home, "edit", "scout", "--model", "other-model")).returncode == 0
    shown = (await plane_cli_async(home, "show", "scout")).stdout.splitlines()
    assert f"  today      $? spent · held · {UNPRICED_WHY}" in shown, shown


async def test_send_wait_to_an_agent_on_an_unpriced_model_exits_kept_not_answered(start_plane):
    """A script tells "answered" (0) from "kept" (75): the message waits, no
    turn is coming now. Without --wait, sending it is a success."""
    plane = await start_plane()
    home = plane.home.root
    assert (await plane_cli_async(home, "edit", "demo", "--model", "other-model")).returncode == 0
    kept = await plane_cli_async(home, "send", "demo", "hello", "--wait", "--timeout", "20")
    assert kept.returncode == 75, kept.stdout + kept.stderr
    assert kept.stdout.startswith("demo is not answering: no price is known for other-model")
    assert (await plane_cli_async(home, "send", "demo", "again")).returncode == 0
    assert plane.llm.requests == []


@pytest.mark.slow
async def test_send_wait_prints_the_answer_to_its_message_not_the_turn_already_running(
    start_plane,
):
    """A message sent while a turn runs is answered by the next turn: the
    running one's answer is not this message's, and its end is not the wait's."""
    plane = await start_plane()
    home = plane.home.root
    plane.llm.reply("The answer to one.", usage=Usage(input_tokens=10), delay_s=2)
    plane.llm.reply("The answer to two.", usage=Usage(input_tokens=10))
    limit_off = await plane_cli_async(home, "send", "demo", "/limit off")  # room for estimates
    assert limit_off.returncode == 0
    assert (await plane_cli_async(home, "send", "demo", "one")).returncode == 0
    while not plane.llm.requests:  # noqa: ASYNC110 - the first turn is with the model (its thread)
        await asyncio.sleep(0.01)
    second = await plane_cli_async(home, "send", "demo", "two", "--wait", "--timeout", "20")
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == ["The answer to two.", "  $0.01 · 10 in · 0 out"]


@pytest.mark.slow
def test_the_tui_is_the_plane_s_own_whatever_the_directory_holds(tmp_path):
    """`plane` execs `python -m tui`: run in a directory that has a `tui/`
    package of its own (a common name), that package must not be what runs."""
    shadow = tmp_path / "project" / "tui"
    shadow.mkdir(parents=True)
    ran = tmp_path / "shadow-ran"
    (shadow / "__init__.py").write_text("")
    (shadow / "__main__.py").write_text(f"open({str(ran)!r}, 'w').close()\nraise SystemExit(3)\n")
    terminal, its_end = pty.openpty()  # the TUI needs one
    with socket.create_server(("127.0.0.1", 0)) as plane:  # where the TUI is pointed
        address = f"127.0.0.1:{plane.getsockname()[1]}"
        process = subprocess.Popen(
            [sys.executable, "-m", "plane", "--tcp", address, "--token", "t"],
            cwd=shadow.parent,
            env=process_environment(PLANE_HOME=str(tmp_path / "home")),
            stdin=its_end,
            stdout=its_end,
            stderr=subprocess.DEVNULL,
        )
        try:
            dialled = _dialled(plane, process)
        finally:
            process.kill()
            process.wait()
            os.close(terminal)
            os.close(its_end)
    assert not ran.exists(), "the directory's own tui package ran"
    assert process.returncode != 3
    assert dialled, "the TUI never dialled its plane"


def _dialled(listener: socket.socket, process: subprocess.Popen[bytes], within: float = 30) -> bool:
    """Whether `process` connects to `listener` before it ends: the real TUI
    dials its plane at once (the shadow package would have exited first)."""
    listener.settimeout(0.1)
    deadline = time.monotonic() + within
    while process.poll() is None and time.monotonic() < deadline:
        try:
            listener.accept()[0].close()
            return True
        except TimeoutError:
            continue
    return False


@pytest.mark.parametrize("args", [["ledger", "--csv"], ["ledger", "--json"], ["status", "--json"]])
@pytest.mark.slow
async def test_output_into_a_closed_pipe_ends_quietly(start_plane, args):
    """A pipe is the process's own: this one runs as a user runs it."""
    plane = await start_plane()
    plane.llm.reply("Hi.", usage=Usage(input_tokens=100, output_tokens=10))
    sent = await plane_cli_async(plane.home.root, "send", "demo", "hello", "--wait")
    assert sent.returncode == 0
    read, write = os.pipe()
    os.close(read)  # the reader (`head`) is gone before a byte is written
    try:
        result = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "plane", *args],
            env={**os.environ, "PLANE_HOME": str(plane.home.root)},
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write)
    assert (result.returncode, result.stderr) == (141, "")


# ── `plane serve` says what it read, where it listens, and when it stops ───


def test_serve_without_a_config_says_where_it_looked(tmp_path):
    home, xdg = tmp_path / "home", tmp_path / "xdg"
    served = plane_serve_until_it_answers(home, cwd=tmp_path, env={"XDG_CONFIG_HOME": str(xdg)})
    assert served.returncode == 0, served.stderr
    assert served.stderr.splitlines() == [
        f"plane: no config in {tmp_path}/agents.yaml or {xdg}/plane/agents.yaml; running on "
        "the built-in defaults (the embedded model, no ceiling)",
        f"plane: serving on {home}/plane.sock (token in {home}/token); no agents",
        "plane: stopped",
    ]


# ── a plane.db that cannot be used: one line, an exit, nothing left ────────


def refused(home: Path) -> str:
    """Run `plane serve` on `home`; check it refused in one line, within a few CPU seconds,
    leaving no socket and no held lock; return the line."""
    config = _config_beside(home)
    cpu = time.process_time()
    result = plane_cli(home, "serve", "--config", str(config))
    assert time.process_time() - cpu < REFUSAL_CPU_S, f"worked over {REFUSAL_CPU_S} CPU seconds"
    return _refusal(home, config, result)


def refused_in_a_process(home: Path, **popen: Any) -> str:
    """`refused`, run as another user runs it: a process of its own."""
    config = _config_beside(home)
    result = subprocess.run(
        [sys.executable, "-m", "plane", "serve", "--config", str(config)],
        env={**os.environ, "PLANE_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=cpu_limit(),
        **popen,
    )
    assert not out_of_cpu(result.returncode), f"worked over {REFUSAL_CPU_S} CPU seconds"
    return _refusal(home, config, result)


def _config_beside(home: Path) -> Path:
    config = home.parent / "agents.yaml"
    if not config.exists():
        config.write_text("defaults:\n  limitUsd: 1\n")
    return config


def _refusal(home: Path, config: Path, result: Ran | subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result.stderr
    assert not (home / "plane.sock").exists()
    lock = home / "plane.lock"
    if lock.exists():
        with open(lock) as handle:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody holds it
    assert "Traceback" not in result.stderr
    said = result.stderr.splitlines()
    assert said[:-1] == [f"plane: config from {config}"], result.stderr
    return said[-1]


def plane_db(home: Path, messages: int = 0) -> Path:
    """A real plane.db (the plane's own schema), with `messages` rows."""

    async def make() -> None:
        db = await SqliteDatabase.open(home / "plane.db")
        await db.write(
            lambda conn: conn.executemany(
                "INSERT INTO messages (agent, at, kind, text) VALUES ('demo', '', 'op', ?)",
                [("hello " * 40,)] * messages,
            )
        )
        await db.close()

    home.mkdir(parents=True, exist_ok=True)
    asyncio.run(make())
    with sqlite3.connect(home / "plane.db") as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return home / "plane.db"


DAMAGED = "is damaged ({}); restore it from a backup, or move it aside to start a new ledger"


def test_a_plane_db_of_garbage_bytes_is_refused(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "plane.db").write_bytes(bytes(range(256)) * 64)
    line = refused(home)
    assert line.startswith(f"plane: {home}/plane.db " + DAMAGED.format("file is not a database"))


def test_a_plane_db_with_damaged_pages_is_refused(tmp_path):
    home = tmp_path / "home"
    db = plane_db(home, messages=2000)
    with open(db, "r+b") as file:  # the header and schema stay; later pages do not
        file.seek(4096 * 5)
        file.write(b"\xa5" * 4096 * 3)
    line = refused(home)
    assert line.startswith(f"plane: {db} " + DAMAGED.format("database disk image is malformed"))


def test_a_plane_db_that_is_a_directory_is_refused(tmp_path):
    home = tmp_path / "home"
    (home / "plane.db").mkdir(parents=True)
    line = refused(home)
    assert line == (
        f"plane: Cannot open {home}/plane.db: it is a directory; the ledger must be a file."
    )


def test_a_plane_db_from_a_newer_plane_is_refused(tmp_path):
    home = tmp_path / "home"
    db = plane_db(home)
    with sqlite3.connect(db) as connection:
        connection.execute("PRAGMA user_version = 999")
    line = refused(home)
    assert line.startswith(f"plane: {db} is from a newer plane (schema 999, this one knows ")
    assert line.endswith("); upgrade plane.")


def test_an_immutable_plane_db_is_refused(tmp_path):
    """Read-only even for root: chattr +i (where the file system has it)."""
    home = tmp_path / "home"
    db = plane_db(home)
    db.chmod(0o600)  # as the plane leaves it
    if subprocess.run(["chattr", "+i", str(db)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        line = refused(home)
    finally:
        subprocess.run(["chattr", "-i", str(db)], check=True)
    assert line == (
        f"plane: Cannot write {db} (attempt to write a readonly database); "
        "make it and its directory writable for this user."
    )


def runs_as_nobody() -> bool:
    if os.geteuid() != 0:
        return False
    try:
        return subprocess.run([sys.executable, "-c", ""], user=65534).returncode == 0
    except PermissionError:  # this Python lives where nobody may not read
        return False


@pytest.mark.skipif(not runs_as_nobody(), reason="needs root, and a Python `nobody` can run")
def test_a_read_only_plane_db_is_refused_for_an_ordinary_user():
    """chmod 0444 stops an ordinary user (it never stops root)."""
    nobody = 65534
    root = Path(tempfile.mkdtemp(prefix="plane-ro-"))
    try:
        root.chmod(0o755)
        home = root / "home"
        db = plane_db(home)
        for path in (home, *home.iterdir()):
            os.chown(path, nobody, nobody)
        db.chmod(0o444)
        line = refused_in_a_process(home, user=nobody, group=nobody, extra_groups=[], cwd=root)
    finally:
        shutil.rmtree(root)
    assert line == (
        f"plane: Cannot write {db} (attempt to write a readonly database); "
        "make it and its directory writable for this user."
    )


def test_a_damaged_compression_store_is_refused_by_name(tmp_path):
    home = tmp_path / "home"
    plane_db(home)
    (home / "refs.db").write_bytes(b"\x00not sqlite\xff" * 500)
    line = refused(home)
    assert line == (
        f"plane: {home}/refs.db is damaged (file is not a database); restore it from a "
        "backup, or move it aside to start an empty one (what compression removed so far "
        "is then gone)."
    )


async def test_edit_with_a_limit_in_tenths_of_a_cent_says_what_to_type_once(start_plane):
    """`plane edit --limit 0.001` said `a limit is` twice (`… a limit is in
    dollars and cents. A limit is 5, $0.25 or off.`): one line, said once."""
    plane = await start_plane()
    edited = await plane_cli_async(plane.home.root, "edit", "demo", "--limit", "0.001")
    assert edited.returncode == 1
    assert edited.stderr.splitlines() == [
        "plane: 0.001 has more than two decimals; a limit is in dollars and cents. "
        "Use 5, $0.25 or off."
    ]
