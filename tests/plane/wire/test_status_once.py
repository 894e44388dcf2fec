"""`plane status`'s one-shot ask (plane.wire.once) against a real plane on
its real socket: the frames it sends are the protocol's (the plane's own
decoder reads them), and what it reads is the snapshot THE client reads."""

import asyncio

import pytest

from plane.wire import protocol as p
from plane.wire.once import PlaneRefused, ask


async def test_it_reads_the_snapshot_the_client_reads(start_plane):
    plane = await start_plane()
    await plane.send("demo", "/limit 2.5")
    reply = await asyncio.to_thread(ask, plane.home.socket, {"type": "status"})
    assert reply["type"] == "snapshot" and reply["id"] == 2
    asked = p.Snapshot.model_validate(reply["snapshot"])
    client = await plane.client()
    told = await client.request(p.Status())
    assert isinstance(told, p.SnapshotReply)
    assert asked.agents == told.snapshot.agents
    assert (asked.day, asked.resets_at) == (told.snapshot.day, told.snapshot.resets_at)


async def test_a_wrong_token_is_the_planes_sentence(start_plane):
    plane = await start_plane()
    with pytest.raises(PlaneRefused) as refused:
        await asyncio.to_thread(ask, plane.home.socket, {"type": "status"}, token="not-the-token")
    assert "token" in str(refused.value)


async def test_a_refused_request_is_the_planes_sentence(start_plane):
    plane = await start_plane()
    with pytest.raises(PlaneRefused) as refused:
        await asyncio.to_thread(ask, plane.home.socket, {"type": "history", "agent": "nobody"})
    assert "nobody" in str(refused.value)


def test_a_plane_with_no_agents_says_how_to_make_one():
    from plane.cli.status import status_text

    snapshot = {"day": "2026-11-29", "now": "2026-11-29T12:00:00+00:00", "agents": []}
    assert status_text(snapshot).splitlines() == [
        "2026-11-29 (UTC)",
        "  No agents yet: `plane new NAME` creates one, or list them in agents.yaml.",
        "config: built-in defaults",
    ]


async def test_an_agent_on_an_unpriced_model_never_reads_as_free(start_plane):
    """Its calls are counted at $0, which is not their cost: `plane status`
    says the model has no price, in text and in JSON."""
    import json

    from plane.cli.status import status_json, status_text
    from tests.support.fixtures_plane import CONFIG

    plane = await start_plane(CONFIG.replace("  demo: {}", "  demo: {model: other-model}"))
    await plane.send("demo", "/limit off")
    snapshot = (await asyncio.to_thread(ask, plane.home.socket, {"type": "status"}))["snapshot"]
    demo, scout = status_text(snapshot).splitlines()[1:-1]  # the last: config
    assert demo.split() == ["demo", "idle", "other-model", "(unpriced)", "$?", "no", "limit"]
    assert "unpriced" not in scout
    agents = {a["name"]: a for a in json.loads(status_json(snapshot))["agents"]}
    assert (agents["demo"]["price_known"], agents["scout"]["price_known"]) == (False, True)


async def test_plane_show_says_an_unpriced_model_is_unpriced(start_plane):
    from plane.cli.manage import shown
    from tests.support.fixtures_plane import CONFIG

    plane = await start_plane(CONFIG.replace("  demo: {}", "  demo: {model: other-model}"))
    details = await (await plane.client()).request(p.ShowAgent(agent="demo"))
    assert isinstance(details, p.ShowAgentReply)
    assert "  model      other-model (scripted, unpriced)" in shown(details).splitlines()


async def test_plane_show_never_reads_at_the_ceiling_short_of_it(start_plane):
    """$0.998 of a $1.00 ceiling is `$0.998`, as the row and `plane status` say."""
    from plane.cli.manage import shown
    from plane.wire.protocol import Usage

    plane = await start_plane()
    plane.llm.reply("ok", usage=Usage(input_tokens=998))
    await plane.turn("demo", "hello")
    details = await (await plane.client()).request(p.ShowAgent(agent="demo"))
    assert isinstance(details, p.ShowAgentReply)
    assert "  today      $0.998 spent · idle" in shown(details).splitlines()


def test_the_day_s_total_counts_agents_deleted_today_as_the_ledger_does():
    """Deleting never refunds: the rows add up to less than the day cost, and
    `plane status` says the whole, as `plane ledger` and the TUI's fleet line do."""
    import json

    from plane.cli.status import status_json, status_text

    snapshot = {
        "day": "2026-11-29",
        "now": "2026-11-29T12:00:00+00:00",
        "resets_at": "2026-11-30T00:00:00+00:00",
        "fleet_spend_today_usd": "0.20",
        "fleet_limit_usd": None,
        "agents": [{"name": "demo", "model": "m", "status": "idle", "spend_today_usd": "0.15"}],
    }
    assert status_text(snapshot).splitlines()[0] == (
        "2026-11-29 (UTC): $0.20 spent today ($0.05 of it by agents deleted today)"
    )
    said = json.loads(status_json(snapshot))
    assert (said["fleet_spend_today_usd"], said["fleet_limit_usd"]) == ("0.2", None)
    capped = {**snapshot, "fleet_limit_usd": "0.20", "fleet_spend_today_usd": "0.15"}
    assert (
        status_text(capped).splitlines()[0]
        == "2026-11-29 (UTC): $0.15 of the fleet's $0.20 spent today"
    )


# ── against a server that is not a plane ─────────────────────────────────────


async def serving(socket, answer):
    """A Unix server that reads two lines, then writes `answer(lines)` and
    closes; one that has not had both within 5 s closes without a word."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(5):
                lines = [await reader.readline(), await reader.readline()]
        except TimeoutError:
            writer.close()
            return
        writer.write(answer(lines))
        await writer.drain()
        writer.close()

    return await asyncio.start_unix_server(serve, socket)


def welcome_and(reply: bytes):
    return lambda lines: b'{"type":"welcome","id":1,"plane_version":"x"}\n' + reply


async def test_the_request_goes_with_the_hello_not_a_read_of_the_plane_later(tmp_path):
    """A busy plane reads its sockets a few times a second: a request sent
    only once the welcome came back would wait a read more. This server
    answers nothing until it has both lines."""
    socket = tmp_path / "plane.sock"
    said: list[list[bytes]] = []

    def answer(lines: list[bytes]) -> bytes:
        said.append(lines)
        return welcome_and(b'{"type":"snapshot","id":2,"snapshot":{"agents":[]}}\n')(lines)

    async with await serving(socket, answer):
        reply = await asyncio.wait_for(
            asyncio.to_thread(ask, socket, {"type": "status"}, token="t"), 10
        )
    assert reply["snapshot"] == {"agents": []}
    [[hello, status]] = said
    assert isinstance(p.decode_request(hello), p.Hello)
    assert isinstance(p.decode_request(status), p.Status)


@pytest.mark.parametrize(
    ("reply", "sentence"),
    [
        (b'{"type":"snapshot","id":2,"x":"' + b"x" * (2 << 20) + b'"}\n', "over the size limit"),
        (b'{"type":"snapshot","id":2,"snap', "closed the connection"),
        (b"not json\n", "cannot read"),
        (b'{"type":"snapshot","id":2,"parts":1,"snapshot":{"agents":[]}}\n{"id":2}\n', "cannot"),
    ],
    ids=["too long", "cut", "not json", "a part of another kind"],
)
async def test_a_reply_it_cannot_take_is_one_sentence(tmp_path, reply, sentence):
    from plane.wire.errors import PlaneError

    socket = tmp_path / "plane.sock"
    async with await serving(socket, welcome_and(reply)):
        with pytest.raises(PlaneError, match=sentence):
            await asyncio.wait_for(
                asyncio.to_thread(ask, socket, {"type": "status"}, token="t"), 10
            )


def test_json_has_an_agent_a_line_whatever_its_strings_hold():
    """The agents are encoded in one call and cut into lines between them:
    a name or model that spells the cut is still one agent's line."""
    import json

    from plane.cli.status import status_json

    spelled = '}, {"name": '
    agents = [{"name": f"a{n}", "model": spelled, "status": "idle"} for n in range(3)]
    snapshot = {"day": "2026-11-29", "now": "2026-11-29T12:00:00+00:00", "agents": agents}
    snapshot["resets_at"] = "2026-11-30T00:00:00+00:00"
    said = status_json(snapshot)
    lines = [line for line in said.splitlines() if line.startswith('    {"name": ')]
    assert [json.loads(line.rstrip(","))["name"] for line in lines] == ["a0", "a1", "a2"]
    assert [a["model"] for a in json.loads(said)["agents"]] == [spelled] * 3


def test_json_reads_a_row_without_its_defaults_as_the_row_with_them():
    """A row travels with its defaults left out, and `--json` reads it as
    it came: each field it leaves out is written as the protocol's default."""
    import json

    from plane.cli.status import status_json
    from plane.wire.once import ROW_DEFAULTS, rows

    bare = {"name": "demo", "model": "m"}
    snapshot = {"day": "2026-11-29", "now": "2026-11-29T12:00:00+00:00", "agents": [bare]}
    snapshot["resets_at"] = "2026-11-30T00:00:00+00:00"
    with_defaults = {**snapshot, "agents": rows(snapshot)}
    assert status_json(snapshot) == status_json(with_defaults)
    [agent] = json.loads(status_json(snapshot))["agents"]
    assert agent["state"] == ROW_DEFAULTS["status"]
