"""The socket: private to its owner, and no frame — garbage, oversized,
unknown, out of turn — gets more than one error reply or takes the plane down."""

import asyncio
import json
import stat

import pytest

from plane import protocol as p
from plane.client import RequestFailed


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
    ],
)
async def test_bad_frames_get_one_error_and_the_plane_stays_up(start_plane, frame, code):
    plane = await start_plane()
    say, writer = await raw(plane)
    await say(p.encode(p.Hello(id=1, protocol_version=p.PROTOCOL_VERSION)))
    reply = await say(frame)
    assert isinstance(reply, p.Error) and reply.code == code
    status = await say(p.encode(p.Status(id=2)))
    assert isinstance(status, p.SnapshotReply), "the same connection still works"
    writer.close()
    client = await plane.client()
    assert isinstance(await client.request(p.Status), p.SnapshotReply)
    assert await plane.services.conversation.history("demo") == []


async def test_a_subscriber_gets_a_snapshot_then_events(start_plane):
    plane = await start_plane()
    client = await plane.client()
    reply = await client.request(p.Subscribe)
    assert isinstance(reply, p.SnapshotReply)
    assert [a.name for a in reply.snapshot.agents] == ["demo", "scout"]
    assert reply.snapshot.agents[0].limit_usd == 1
    await client.request(p.Send, agent="demo", text="/limit 2")
    seen = []
    async for event in client.events():
        seen.append(event)
        if isinstance(event, p.AgentUpdated):
            break
    kinds = [e.message.kind for e in seen if isinstance(e, p.MessageAppended)]
    assert kinds == ["operator", "plane"]
    assert seen[-1].agent.limit_usd == 2


async def test_errors_reach_the_client_as_one_sentence(start_plane):
    plane = await start_plane()
    client = await plane.client()
    with pytest.raises(RequestFailed) as caught:
        await client.request(p.NewAgent, name="demo", model="scripted-model")
    assert caught.value.error.code == "exists"
    with pytest.raises(RequestFailed, match="not a configured model"):
        await client.request(p.NewAgent, name="fresh", model="gpt-9")


async def test_an_agent_created_from_the_keyboard_gets_the_default_ceiling_and_stays(start_plane):
    plane = await start_plane()
    client = await plane.client()
    reply = await client.request(p.NewAgent, name="fresh", model="other-model", role="be brief")
    assert reply.agent.limit_usd == 1
    plane = await start_plane(restart=plane)
    state = await plane.services.crew.state("fresh")
    assert (state.model, state.role, state.limit_usd) == ("other-model", "be brief", 1)


async def test_a_second_plane_on_the_same_home_refuses_to_start(start_plane):
    from plane.server import AlreadyRunning, Plane

    plane = await start_plane()
    second = Plane(plane.plane.config, plane.home, plane.clock)
    with pytest.raises(AlreadyRunning):
        await second.startup()
    client = await plane.client()
    assert isinstance(await client.request(p.Status), p.SnapshotReply)


def test_frames_round_trip_as_json():
    frame = p.Send(id=3, agent="demo", text="hi")
    assert json.loads(p.encode(frame)) == {"type": "send", "id": 3, "agent": "demo", "text": "hi"}


async def test_tcp_needs_the_token(start_plane):
    from plane.client import PlaneClient

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
        assert isinstance(await client.request(p.Status), p.SnapshotReply)
    finally:
        await client.close()
