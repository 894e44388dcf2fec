"""Nobody but the operator gets in: an agent's own commands attack the plane.

The script below is what an agent would write with `write_file` and run with
`run_command`; it is run here through that very tool (the sandbox, the
scrubbed environment, the process group), against a real plane listening on
its Unix socket and on TCP. It tries to take the operator's proof (the token
file, any process's command line or environment) and to act as the operator
without it: `/limit off`, `new_agent`, `stop` and every lifecycle request
(delete, pause, rename, edit, interrupt, show), after a hello with no
token, a guessed one or an empty one, and before any hello. Every attempt is
refused; the ceiling, the roster and the conversation are as they were.
"""

from __future__ import annotations

import asyncio
import json
import os
import textwrap
from pathlib import Path

import pytest

from plane.clock import ManualClock
from plane.tools import sandbox
from plane.tools.shell import RunCommandArgs, run_command
from plane.wire import protocol as p
from tests.plane.tools.conftest import FakeContext
from tests.support.fixtures_plane import NOON

pytestmark = pytest.mark.skipif(sandbox.abi() == 0, reason="run_command needs Landlock here")

AGENT_SCRIPT = textwrap.dedent(
    r"""
    import json, os, socket, sys

    sock_path, token_path = sys.argv[1], sys.argv[2]
    port, plane_pid = int(sys.argv[3]), int(sys.argv[4])
    found = []

    def attempt(what, action):
        try:
            result = action()
        except Exception as exc:
            result = f"{type(exc).__name__}: {exc}"
        found.append({"what": what, "result": result})

    def read(path):
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")

    attempt("read the token file", lambda: read(token_path))
    attempt("list the plane's home", lambda: os.listdir(os.path.dirname(token_path)))
    attempt("read it by the plane's /proc", lambda: read(f"/proc/{plane_pid}/root{token_path}"))

    ORDERS = [
        {"type": "send", "id": 2, "agent": "demo", "text": "/limit off"},
        {"type": "new_agent", "id": 3, "name": "mole", "model": "scripted-model"},
        {"type": "stop", "id": 4},
        {"type": "delete_agent", "id": 5, "agent": "demo"},
        {"type": "pause_agent", "id": 6, "agent": "demo", "paused": True},
        {"type": "rename_agent", "id": 7, "agent": "demo", "new_name": "mole"},
        {"type": "edit_agent", "id": 8, "agent": "demo", "limit": "off", "tools": ["all"]},
        {"type": "interrupt", "id": 9, "agent": "demo"},
        {"type": "show_agent", "id": 10, "agent": "demo"},
    ]

    def talk(family, address, hello):
        s = socket.socket(family)
        s.settimeout(5)
        s.connect(address)
        lines = [hello] if hello is not None else []
        s.sendall(b"".join(json.dumps(f).encode() + b"\n" for f in lines + ORDERS))
        replies, buffer = [], b""
        while True:
            try:
                chunk = s.recv(65536)
            except OSError as exc:
                replies.append(f"{type(exc).__name__}")
                break
            if not chunk:
                break
            buffer += chunk
            *done, buffer = buffer.split(b"\n")
            replies += [json.loads(line) for line in done]
            if len(replies) == len(lines + ORDERS):  # every order answered: it got in
                break
        s.close()
        return replies

    tokens = {"no token": None, "an empty token": "", "a guessed token": "0" * 43}
    for name, token in tokens.items():
        hello = {"type": "hello", "id": 1, "protocol_version": VERSION}
        if token is not None:
            hello["token"] = token
        attempt(f"the socket, {name}", lambda: talk(socket.AF_UNIX, sock_path, hello))
        attempt(f"TCP, {name}", lambda: talk(socket.AF_INET, ("127.0.0.1", port), hello))
    attempt("the socket, no hello", lambda: talk(socket.AF_UNIX, sock_path, None))
    attempt("TCP, no hello", lambda: talk(socket.AF_INET, ("127.0.0.1", port), None))
    print(json.dumps(found))
    """
)


async def run_as_agent(workspace: Path, command: str) -> str:
    # What `run_command` is handed in an agent's turn: the agent, its
    # workspace, the sandbox on (as agents.yaml ships it).
    ctx = FakeContext("demo", workspace, ManualClock(NOON), sandboxed=True)
    return await run_command(RunCommandArgs(command=command, timeout_s=60), ctx)


async def test_an_agents_commands_cannot_act_as_the_operator(start_plane):
    plane = await start_plane(tcp=("127.0.0.1", 0))
    workspace = plane.home.workspace("demo")
    workspace.mkdir(parents=True, exist_ok=True)  # made by its first turn: not yet
    (workspace / "attack.py").write_text(AGENT_SCRIPT.replace("VERSION", str(p.PROTOCOL_VERSION)))
    before = await plane.rows.state("demo")

    frame = await run_as_agent(
        workspace,
        f"python3 attack.py {plane.home.socket} {plane.home.token} {plane.plane.tcp_port} "
        f"{os.getpid()}",  # the plane runs in this process
    )
    output = frame.splitlines()[1]
    assert frame.endswith("s]") and "[exit 0 ·" in frame, frame
    found = {a["what"]: a["result"] for a in json.loads(output)}

    assert "PermissionError" in found["read the token file"]
    assert "PermissionError" in str(found["list the plane's home"])
    # Refused, or not even there: a command has a /proc of its own PID namespace.
    by_proc = found["read it by the plane's /proc"]
    assert by_proc.startswith(("PermissionError", "FileNotFoundError")), by_proc
    for where in ("the socket", "TCP"):
        for name in ("no token", "an empty token", "a guessed token"):
            replies = found[f"{where}, {name}"]
            assert isinstance(replies, list), (where, name, replies)
            # One refusal, then the connection closed: none of the orders is read.
            refused = [(r["id"], r.get("code", r["type"])) for r in replies]
            assert refused == [(1, "unauthorized")], (where, name, replies)
        replies = found[f"{where}, no hello"]
        refused = [(r["id"], r.get("code", r["type"])) for r in replies]
        if where == "the socket":
            # A command runs in a PID namespace of its own, so the socket
            # refuses it at its first frame, token or not.
            assert refused == [(2, "unauthorized")], (where, replies)
            assert "another PID namespace" in replies[0]["message"]
        else:
            assert refused == [(n, "version") for n in range(2, 11)], (where, replies)

    after = await plane.rows.state("demo")
    assert after.limit_usd == before.limit_usd == 1, "the ceiling is where the operator left it"
    assert after == before, "not paused, renamed, edited or deleted"
    assert [s.name for s in plane.services.roster] == ["demo", "scout"], "no agent was made"
    assert not plane.plane.stop_event.is_set(), "the plane was not stopped"
    assert await plane.services.conversation.history("demo") == [], "nothing said as the operator"

    client = await plane.client()  # the operator still gets in
    assert isinstance(await client.request(p.Status()), p.SnapshotReply)


async def test_the_tui_reads_the_token_from_the_home_and_a_refusal_is_final(start_plane):
    from tui.link import Address, Backoff, Link
    from tui.messages import PlaneConnected, PlaneLost

    plane = await start_plane()
    where, soon = Address(path=plane.home.socket), Backoff(0.01, 0.01)
    posted: list[object] = []
    client = Link(where, posted.append, backoff=soon)
    running = asyncio.create_task(client.run())
    try:
        for _ in range(500):
            if any(isinstance(m, PlaneConnected) for m in posted):
                break
            await asyncio.sleep(0.01)
        assert any(isinstance(m, PlaneConnected) for m in posted), posted
    finally:
        running.cancel()

    plane.home.token.write_text("a-token-from-somewhere-else")
    posted.clear()
    client = Link(where, posted.append, backoff=soon)
    await asyncio.wait_for(client.run(), 10)  # returns: no retrying a refusal
    [lost] = posted
    assert isinstance(lost, PlaneLost) and lost.final
    assert lost.reason.startswith("Wrong or missing token; it is in the plane's home")
    assert "Not trying again" in lost.reason
