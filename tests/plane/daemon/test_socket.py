"""The socket: private to its owner and to the operator (the token, on the
Unix socket as on TCP; another PID namespace refused), and no frame —
garbage, oversized, nested, unknown, out of turn — gets more than one error
reply, ends its connection or takes the plane down."""

import asyncio
import json
import shutil
import sqlite3
import stat
import subprocess
import sys
import textwrap

import pytest

from plane.home import Home
from plane.wire import protocol as p
from plane.wire.client import PlaneClient, RequestFailed
from tests.support.command import plane_cli_async


async def raw(plane):
    reader, writer = await asyncio.open_unix_connection(plane.home.socket, limit=4 << 20)

    async def say(data: bytes):
        writer.write(data)
        await writer.drain()
        return p.decode_server_frame(await reader.readline())

    return say, writer


async def test_the_socket_is_private_to_its_owner(start_plane):
    plane = await start_plane()
    assert stat.S_IMODE(plane.home.socket.stat().st_mode) == 0o600


async def test_a_request_before_hello_is_refused(start_plane):
    plane = await start_plane()
    say, writer = await raw(plane)
    reply = await say(b'{"type":"status","id":1}\n')
    assert isinstance(reply, p.Error) and (reply.code, reply.id) == ("version", 1)
    writer.close()


async def test_another_protocol_version_is_refused(start_plane):
    plane = await start_plane()
    say, writer = await raw(plane)
    reply = await say(b'{"type":"hello","id":1,"protocol_version":99}\n')
    assert isinstance(reply, p.Error) and reply.code == "version"
    writer.close()


async def test_a_client_of_protocol_2_is_told_to_upgrade(start_plane):
    """Frames refuse fields they do not know, and rows, turns' ends, sends'
    replies and cost lines have fields a client of protocol 2 never heard of:
    it is refused at its hello with the sentence, not mid-session by a frame."""
    plane = await start_plane()
    say, writer = await raw(plane)
    reply = await say(b'{"type":"hello","id":1,"protocol_version":2}\n')
    assert isinstance(reply, p.Error)
    assert reply.message == (
        "This plane speaks protocol 3; the client speaks 2. Upgrade the older one."
    )
    writer.close()


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (b"not json at all\n", "bad_frame"),
        (b"[1, 2, 3]\n", "bad_frame"),
        (b'{"type":"launch_missiles","id":7}\n', "bad_frame"),
        (b'{"type":"send","id":8,"agent":"demo"}\n', "bad_frame"),
        (b'{"type":"send","id":9,"agent":"demo","text":"x","extra":1}\n', "bad_frame"),
        (b'{"type":"send","id":10,"agent":"nobody","text":"hi"}\n', "no_such_agent"),
        (b'{"type":"history","id":11,"agent":"demo","limit":-5}\n', "bad_frame"),
        (b"\xff\xfe\x00garbage\n", "bad_frame"),
        (b"x" * (p.MAX_FRAME_BYTES + 10) + b"\n", "too_large"),
        (
            b'{"type":"send","id":12,"agent":"demo","text":' + b"[" * 1000 + b"]" * 1000 + b"}\n",
            "bad_frame",
        ),
        (b'{"id":13,"x":' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"}\n", "bad_frame"),
        (b"[" * 100_000 + b"\n", "bad_frame"),
    ],
)
async def test_bad_frames_get_one_error_and_the_plane_stays_up(start_plane, frame, code):
    plane = await start_plane()
    say, writer = await raw(plane)
    await say(plane.hello())
    reply = await say(frame)
    assert isinstance(reply, p.Error) and reply.code == code
    status = await say(p.encode(p.Status(id=2)))
    assert isinstance(status, p.SnapshotReply), "the same connection still works"
    writer.close()
    client = await plane.client()
    assert isinstance(await client.request(p.Status()), p.SnapshotReply)
    assert await plane.services.conversation.history("demo") == []


async def test_a_subscriber_gets_a_snapshot_then_events(start_plane):
    plane = await start_plane()
    client = await plane.client()
    reply = await client.request(p.Subscribe())
    assert isinstance(reply, p.SnapshotReply)
    assert [a.name for a in reply.snapshot.agents] == ["demo", "scout"]
    assert reply.snapshot.agents[0].limit_usd == 1
    await client.request(p.Send(agent="demo", text="/limit 2"))
    seen = []
    async for event in client.events():
        seen.append(event)
        if isinstance(event, p.AgentUpdated):
            break
    kinds = [e.message.kind for e in seen if isinstance(e, p.MessageAppended)]
    assert kinds == ["operator", "plane"]
    assert seen[-1].agent.limit_usd == 2


async def test_a_store_failing_a_request_is_said_in_its_words_not_as_a_traceback(
    start_plane, monkeypatch, caplog
):
    """The store away or refusing under a request (the ledger read, here):
    the client hears what failed, and the log has one line, not a traceback."""
    plane = await start_plane()

    async def away(*args: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(plane.services.ledger, "entries", away)
    client = await plane.client()
    with pytest.raises(RequestFailed) as caught:
        await client.request(p.Ledger())
    said = "The plane's store failed this request: disk I/O error."
    assert (caught.value.error.code, caught.value.error.message) == ("internal", said)
    logged = [r for r in caplog.records if r.name == "plane.daemon.failed"]
    assert [r.getMessage() for r in logged] == [
        "request ledger: the store failed it: disk I/O error"
    ]
    assert all(r.exc_info is None for r in logged)


async def test_errors_reach_the_client_as_one_sentence(start_plane):
    plane = await start_plane()
    client = await plane.client()
    with pytest.raises(RequestFailed) as caught:
        await client.request(p.NewAgent(name="demo", model="scripted-model"))
    assert caught.value.error.code == "exists"
    with pytest.raises(RequestFailed, match="not a configured model"):
        await client.request(p.NewAgent(name="fresh", model="gpt-9"))


async def test_an_agent_created_from_the_keyboard_gets_the_default_ceiling_and_stays(start_plane):
    plane = await start_plane()
    client = await plane.client()
    reply = await client.request(p.NewAgent(name="fresh", model="other-model", role="be brief"))
    assert reply.agent.limit_usd == 1
    plane = await start_plane(restart=plane)
    state = await plane.rows.state("fresh")
    assert (state.model, state.role, state.limit_usd) == ("other-model", "be brief", 1)


async def test_a_second_plane_on_the_same_home_refuses_to_start(start_plane):
    from plane.daemon.server import AlreadyRunning, Plane

    plane = await start_plane()
    second = Plane(plane.plane.config, plane.home, plane.clock)
    with pytest.raises(AlreadyRunning):
        await second.startup()
    client = await plane.client()
    assert isinstance(await client.request(p.Status()), p.SnapshotReply)


def test_frames_round_trip_as_json():
    frame = p.Send(id=3, agent="demo", text="hi")
    assert json.loads(p.encode(frame)) == {"type": "send", "id": 3, "agent": "demo", "text": "hi"}


async def test_tcp_needs_the_token(start_plane):

    plane = await start_plane(tcp=("127.0.0.1", 0))
    token_file = plane.home.root / "token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    where = ("127.0.0.1", plane.plane.tcp_port)
    for wrong in (None, "not-the-token"):
        with pytest.raises(RequestFailed) as caught:
            await PlaneClient.connect(plane.home.socket, tcp=where, token=wrong)
        assert caught.value.error.code == "unauthorized"
    client = await PlaneClient.connect(plane.home.socket, tcp=where, token=token_file.read_text())
    try:
        assert isinstance(await client.request(p.Status()), p.SnapshotReply)
    finally:
        await client.close()


# ── who may connect ─────────────────────────────────────────────────────────


async def greet(plane, token, where=None):
    """Say hello with `token`, then ask for the status at once; return the
    hello's reply and what came after it (b"" when the plane hung up)."""
    if where is None:
        reader, writer = await asyncio.open_unix_connection(plane.home.socket)
    else:
        reader, writer = await asyncio.open_connection(*where)
    hello = {"type": "hello", "id": 1, "protocol_version": p.PROTOCOL_VERSION}
    if token is not None:
        hello["token"] = token
    writer.write(json.dumps(hello).encode() + b"\n" + p.encode(p.Status(id=2)))
    await writer.drain()
    reply = p.decode_server_frame(await asyncio.wait_for(reader.readline(), 5))
    if isinstance(reply, p.Error):
        after = await asyncio.wait_for(reader.read(), 5)
    else:
        after = await asyncio.wait_for(reader.readline(), 5)  # the status, answered
    writer.close()
    return reply, after


@pytest.mark.parametrize(
    "token", [None, "", "guess", "x" * 43, "tökén", "\u0000", "\U0001f600" * 50]
)
async def test_the_unix_socket_needs_the_token_too(start_plane, token):
    plane = await start_plane()
    reply, after = await greet(plane, token)
    assert isinstance(reply, p.Error) and (reply.id, reply.code) == (1, "unauthorized")
    assert (
        reply.message == "Wrong or missing token; it is in the plane's home, in the file `token`."
    )
    assert after == b"", "a refused client hears nothing more: the connection is closed"
    reply, after = await greet(plane, plane.token)
    assert isinstance(reply, p.HelloReply)
    assert isinstance(p.decode_server_frame(after), p.SnapshotReply)


async def test_a_non_ascii_token_over_tcp_is_refused_not_a_crash(start_plane):
    plane = await start_plane(tcp=("127.0.0.1", 0))
    where = ("127.0.0.1", plane.plane.tcp_port)
    for token in ("tökén", "\u00e9" * 43, plane.token[:-1] + "é"):
        reply, after = await greet(plane, token, where)
        assert isinstance(reply, p.Error) and reply.code == "unauthorized"
        assert after == b""
    reply, _ = await greet(plane, plane.token, where)
    assert isinstance(reply, p.HelloReply)


async def test_a_frame_nested_a_thousand_deep_is_answered_with_its_connection_intact(start_plane):
    plane = await start_plane()
    say, writer = await raw(plane)
    assert isinstance(await say(plane.hello()), p.HelloReply)
    for depth in (100, 1000, 10_000):
        nested = b"[" * depth + b"]" * depth
        reply = await say(b'{"type":"status","id":5,"x":' + nested + b"}\n")
        assert isinstance(reply, p.Error) and reply.code == "bad_frame"
    assert isinstance(await say(p.encode(p.Status(id=6))), p.SnapshotReply)
    writer.close()


async def test_the_plane_makes_its_token_at_every_start_and_clients_read_it(start_plane):
    plane = await start_plane()
    token = plane.token
    assert len(token) >= 32 and stat.S_IMODE(plane.home.token.stat().st_mode) == 0o600
    plane = await start_plane(restart=plane)
    assert plane.token == token, "kept across restarts"
    plane.home.token.unlink()
    plane = await start_plane(restart=plane)
    assert plane.token != token, "made again when missing"
    client = await plane.client()  # reads it from the socket's directory: nothing to pass
    assert isinstance(await client.request(p.Status()), p.SnapshotReply)
    plane.home.token.write_text("")
    plane = await start_plane(restart=plane)
    assert plane.token, "an empty token file is no token: a new one is made"
    assert not list(plane.home.root.glob(".token*")), "no draft left behind"


async def test_a_peer_in_another_pid_namespace_is_refused_even_with_the_token(start_plane):
    plane = await start_plane()
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "--pid", "--fork", "true"]).returncode:  # noqa: ASYNC221
        pytest.skip("cannot make a PID namespace here")
    script = textwrap.dedent(
        f"""
        import json, socket
        s = socket.socket(socket.AF_UNIX)
        s.connect({str(plane.home.socket)!r})
        token = open({str(plane.home.token)!r}).read().strip()
        s.sendall(json.dumps({{"type": "hello", "id": 1, "protocol_version": {p.PROTOCOL_VERSION},
                               "token": token}}).encode() + b"\\n")
        f = s.makefile("rb")
        print(f.readline().decode(), end="")
        print(repr(f.read()))
        """
    )
    said = await asyncio.create_subprocess_exec(
        unshare,
        "--pid",
        "--fork",
        sys.executable,
        "-c",
        script,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(said.communicate(), 20)
    reply_line, rest = out.decode().splitlines()
    reply = p.decode_server_frame(reply_line.encode())
    assert isinstance(reply, p.Error) and (reply.id, reply.code) == (1, "unauthorized")
    assert "PID namespace" in reply.message
    assert rest == "b''", "and the connection is closed"
    client = await plane.client()  # the operator, in the plane's namespace, still gets in
    assert isinstance(await client.request(p.Status()), p.SnapshotReply)


async def test_a_refused_cli_client_says_one_line_and_exits_non_zero(start_plane):
    plane = await start_plane()
    plane.home.token.write_text("not-what-the-plane-holds")
    done = await plane_cli_async(plane.home.root, "status")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "plane: Wrong or missing token; it is in the plane's home, in the file `token`."
    ]


# ── the home is private ─────────────────────────────────────────────────────


async def test_a_loose_home_is_made_private_whatever_was_there(start_plane, tmp_path):
    root = tmp_path / "home"
    root.mkdir(mode=0o755)
    root.chmod(0o755)
    loose = ["plane.db", "plane.db-wal", "plane.log", "plane.lock", "token", "refs.db", "tui.json"]
    (root / "workspaces" / "demo").mkdir(mode=0o755, parents=True)
    (root / "workspaces").chmod(0o755)  # as an older plane made it
    for name in loose:
        (root / name).write_bytes(b"")
        (root / name).chmod(0o644)
    (root / "token").write_text("an-old-token-the-operator-made-by-hand")
    (root / "token").chmod(0o644)
    notes = root / "notes.txt"  # not the plane's: left as it is
    notes.write_text("mine")
    notes.chmod(0o644)
    plane = await start_plane()
    assert plane.home.root == root
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    for path in sorted(root.iterdir()):
        if path.name in loose or path.name.startswith("plane.") or path.name == "refs.db-wal":
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name
    assert stat.S_IMODE(notes.stat().st_mode) == 0o644
    assert stat.S_IMODE((root / "workspaces").stat().st_mode) == 0o700
    assert plane.token == "an-old-token-the-operator-made-by-hand"


def test_a_fresh_home_holds_nothing_another_user_can_read(tmp_path):
    home = Home(tmp_path / "fresh").ensure()
    assert stat.S_IMODE(home.root.stat().st_mode) == 0o700
    made = sorted(p.name for p in home.root.iterdir())
    assert made == ["plane.db", "plane.lock", "plane.log", "refs.db"]
    for path in home.root.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name
    assert home.make_token() == home.make_token()
    assert stat.S_IMODE(home.token.stat().st_mode) == 0o600


def test_links_and_directories_named_as_the_planes_files_are_left_alone(tmp_path):
    """A link named as one of the plane's files or as its workspaces is not
    followed (what it points at keeps its mode; nothing is made through a
    dangling one), and a directory so named keeps its own; the plane's other
    files are made."""
    mine = tmp_path / "mine.txt"
    mine.write_text("mine")
    mine.chmod(0o644)
    root = tmp_path / "home"
    (root / "plane.lock").mkdir(mode=0o755, parents=True)
    (root / "plane.lock").chmod(0o755)
    (root / "plane.log").symlink_to(mine)
    (root / "token").symlink_to(tmp_path / "nowhere")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    elsewhere.chmod(0o755)
    (root / "workspaces").symlink_to(elsewhere)
    Home(root).ensure()
    assert stat.S_IMODE(mine.stat().st_mode) == 0o644
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755
    assert not (tmp_path / "nowhere").exists()
    kinds = {path.name: (path.is_symlink(), path.is_dir()) for path in root.iterdir()}
    assert kinds == {
        "plane.lock": (False, True),
        "plane.log": (True, False),
        "token": (True, False),
        "workspaces": (True, True),
        "plane.db": (False, False),
        "refs.db": (False, False),
    }
    assert stat.S_IMODE((root / "plane.lock").stat().st_mode) == 0o755
    for name in ("plane.db", "refs.db"):
        assert stat.S_IMODE((root / name).stat().st_mode) == 0o600, name
