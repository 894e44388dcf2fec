"""Alerts (`notify:`): a real plane pushes to a real local HTTP receiver
(aiohttp) on amber, held, resumed and a refused ask; a receiver that hangs
never delays a turn, and one that is dead has its alert logged."""

import asyncio
import logging
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from plane.clock import ManualClock
from plane.config import parse_config
from plane.daemon.alert import Alert
from plane.daemon.alerts import Notifier
from plane.daemon.events import EventBus
from plane.errors import ConfigError
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_gateway import CONFIG as GATEWAY
from tests.support.fixtures_plane import CONFIG
from tests.support.local_http import local_client
from tests.support.stream_events import chat_reply

NOON = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def notifying(receiver: Receiver, *, ntfy: bool = True) -> str:
    block = f"notify:\n  webhook: {receiver.url}/hook\n  retries: 0\n"
    if ntfy:
        block += f"  ntfy: {receiver.url}/topic\n"
    return CONFIG + block


async def test_amber_held_resumed_and_a_refused_ask_reach_both_receivers(start_plane, receiver):
    plane = await start_plane(notifying(receiver))
    notifier = plane.runtime.notifier
    plane.llm.reply("Most of it.", usage=Usage(input_tokens=850))  # $0.85 of $1.00
    await plane.turn("demo", "spend")
    await notifier.drained()
    plane.llm.reply("The rest.", usage=Usage(input_tokens=200))  # $1.05: over
    await plane.turn("demo", "more")
    await notifier.drained()
    await plane.send("demo", "/limit 5")
    await plane.quiet()
    plane.llm.reply("", tool_calls=[("set_own_limit", {"usd": "50"})], usage=Usage())
    plane.llm.reply("Asked.", usage=Usage())
    await plane.turn("demo", "ask for more")
    await notifier.drained()

    hooks = receiver.hooks()
    assert [(h["event"], h["agent"]) for h in hooks] == [
        ("amber", "demo"),
        ("held", "demo"),
        ("resumed", "demo"),
        ("ask_refused", "demo"),
    ]
    amber, held, resumed, refused = hooks
    assert amber["text"] == "demo has spent $0.85 today, 85% of its $1.00 daily ceiling."
    assert (amber["spend_today_usd"], amber["limit_usd"]) == ("0.85", "1")
    assert (amber["price_known"], amber["floor_priced"]) == (True, False)
    assert held["text"] == (
        "demo is held: $1.05 spent today, of $1.00 a day. It starts no new turn until "
        "00:00 UTC, in 12h 00m, or until the limit is raised."
    )
    assert held["resumes_at"] == "2026-11-30T00:00:00+00:00"
    assert resumed["text"] == "demo has resumed: $1.05 spent today, of $5.00 a day."
    assert (refused["price_known"], refused["floor_priced"]) == (True, False)  # its last row
    assert refused["text"] == (
        "demo: This agent asked for a ceiling of $50.00 a day, which is above the $5.00 it "
        "has. It can ask to be held to less, never to more: /limit $50.00, if you meant it."
    )
    assert receiver.topics() == [
        ("plane: demo is amber", amber["text"]),
        ("plane: demo is held", held["text"]),
        ("plane: demo resumed", resumed["text"]),
        ("plane: demo asked for more", refused["text"]),
    ]


async def test_a_refused_ask_and_a_loop_say_the_agents_spend_and_ceiling_as_the_others_do(
    start_plane, receiver
):
    """Every alert's JSON has `spend_today_usd` and `limit_usd` filled, not
    null where the agent's row did not change with it."""
    plane = await start_plane(notifying(receiver, ntfy=False))
    notifier = plane.runtime.notifier
    plane.llm.reply(
        "", tool_calls=[("set_own_limit", {"usd": "50"})], usage=Usage(input_tokens=100)
    )
    plane.llm.reply("Asked.", usage=Usage(input_tokens=100))
    await plane.turn("demo", "ask for more")
    await notifier.drained()
    workspace = plane.services.roster.get("demo").workspace
    (workspace / "a.txt").write_text("the same every time\n")
    for _ in range(5):
        plane.llm.reply("", tool_calls=[("read_file", {"path": "a.txt"})], usage=Usage())
    await plane.turn("demo", "read it")
    await notifier.drained()
    told = {h["event"]: h for h in receiver.hooks()}
    asked = told["ask_refused"]
    assert (asked["spend_today_usd"], asked["limit_usd"]) == ("0.1", "1"), "as it asked"
    assert (told["loop"]["spend_today_usd"], told["loop"]["limit_usd"]) == ("0.2", "1")


async def test_only_the_moments_asked_for_are_sent(start_plane, receiver):
    plane = await start_plane(notifying(receiver, ntfy=False) + "  on: [held]\n")
    plane.llm.reply("Most of it.", usage=Usage(input_tokens=850))
    await plane.turn("demo", "spend")
    plane.llm.reply("The rest.", usage=Usage(input_tokens=200))
    await plane.turn("demo", "more")
    await plane.send("demo", "/limit off")
    await receiver.until_hook("held")
    await plane.quiet()
    await plane.runtime.notifier.drained()
    assert [h["event"] for h in receiver.hooks()] == ["held"]


async def test_a_receiver_that_hangs_never_delays_a_turn(start_plane, receiver):
    receiver.hang = asyncio.Event()
    plane = await start_plane(notifying(receiver, ntfy=False))
    await plane.send("demo", "/limit 0")  # held at once: the alert's POST now hangs
    await asyncio.wait_for(receiver.arrived.wait(), 10)
    await plane.send("demo", "/limit off")
    plane.llm.reply("Still here.", usage=Usage(input_tokens=1))
    said = await plane.turn("demo", "are you there?")
    assert "Still here." in [m.text for m in said]
    assert not receiver.hang.is_set() and len(receiver.got) == 1  # the first POST still hangs
    receiver.hang.set()
    await plane.runtime.notifier.drained()
    assert [h["event"] for h in receiver.hooks()] == ["held", "resumed"]


def _notifier(url: str, retries: int) -> Notifier:
    config = parse_config(f"notify:\n  webhook: {url}\n  retries: {retries}\n  timeout_s: 2\n")
    assert config.notify is not None
    return Notifier(config.notify, ManualClock(NOON), backoff_s=0.001)


async def test_a_failing_receiver_is_retried_within_the_bound(receiver, caplog):
    receiver.failures = 2
    notifier = _notifier(f"{receiver.url}/hook", retries=2)
    notifier.start(EventBus(), _empty())  # nothing on it: told directly
    notifier.tell(Alert("held", "demo", "demo is held.", NOON))
    await notifier.drained()
    await notifier.aclose()
    assert len(receiver.got) == 3 and receiver.hooks()[-1]["text"] == "demo is held."
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_dead_receiver_has_its_alert_logged_not_lost(receiver, caplog):
    receiver.failures = 10
    notifier = _notifier(f"{receiver.url}/hook", retries=1)
    notifier.start(EventBus(), _empty())  # nothing on it: told directly
    notifier.tell(Alert("held", "demo", "demo is held.", NOON))
    with caplog.at_level(logging.WARNING, logger="plane.daemon.alert_receivers"):
        await notifier.drained()
    await notifier.aclose()
    assert len(receiver.got) == 2  # the first try and one retry: the bound
    [error] = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert error == (
        f"alert not delivered to {receiver.url}/hook after 2 tries (HTTP 500): demo is held."
    )


async def test_nobody_listening_is_logged_too(caplog, unused_tcp_port):
    notifier = _notifier(f"http://127.0.0.1:{unused_tcp_port}/hook", retries=0)
    notifier.start(EventBus(), _empty())  # nothing on it: told directly
    notifier.tell(Alert("amber", "demo", "demo is amber.", NOON))
    with caplog.at_level(logging.WARNING, logger="plane.daemon.alert_receivers"):
        await notifier.drained()
    await notifier.aclose()
    [error] = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert error.startswith(f"alert not delivered to http://127.0.0.1:{unused_tcp_port}/hook")
    assert error.endswith(": demo is amber.") and "ClientConnectorError" in error


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("notify: {}\n", "agents.yaml line 1: notify: needs a webhook or an ntfy URL (or both)."),
        (
            "notify:\n  webhook: ftp://example.com/hook\n",
            "agents.yaml line 2: notify.webhook: must start with http:// or https://",
        ),
        (
            "notify:\n  ntfy: https://ntfy.sh/t\n  on: [amber, loud]\n",
            "agents.yaml line 3: notify.on.1: one of amber, held, resumed, ask_refused, spike, "
            'loop or tag; got "loud".',
        ),
        ("notify:\n  ntfy: https://ntfy.sh/t\n  retries: 99\n", "line 3: notify.retries:"),
        (
            "notify:\n  webhok: https://x.example/h\n",
            "line 2: notify.webhok: unknown key (did you mean webhook?).",
        ),
    ],
)
def test_a_bad_notify_block_is_one_line_with_its_key_and_line(block, expected):
    with pytest.raises(ConfigError) as refused:
        parse_config(block)
    assert expected in str(refused.value) and "\n" not in str(refused.value)


def _empty():
    from plane.wire.protocol import Snapshot

    return Snapshot(day=NOON.date(), now=NOON, resets_at=NOON, agents=[], models=[])


def test_a_held_sentence_says_what_frees_the_agent():
    from decimal import Decimal

    from plane.daemon.alert import sentence
    from plane.wire.protocol import AgentState

    def held(**fields):
        base = {"name": "demo", "model": "m", "provider": "p", "status": "held"}
        return AgentState(**{**base, "spend_today_usd": Decimal("0.2"), **fields})

    resets = datetime(2026, 11, 30, tzinfo=UTC)
    assert sentence("held", held(limit_usd=Decimal(0)), NOON) == (
        "demo is held: $0.20 spent today, of $0.00 a day. It starts no new turn until the "
        "operator raises its limit."
    )
    assert sentence("held", held(limit_usd=Decimal(1), price_known=False), NOON) == (
        "demo is held: $0.20+$? spent today, of $1.00 a day. It starts no new turn until m has "
        "a price under `pricing:` in agents.yaml."
    )  # what was priced before, the rest not: as its row says it
    floor = held(status="idle", limit_usd=Decimal(1), floor_priced=True)
    assert sentence("resumed", floor, NOON) == (
        "demo has resumed: $0.20+$? spent today, of $1.00 a day."
    )
    amber = held(status="idle", limit_usd=Decimal("0.25"), floor_priced=True)
    assert sentence("amber", amber, NOON) == (
        "demo has spent $0.20+$? today, 80% of its $0.25 daily ceiling."
    )  # at a floor, as its row says it
    assert sentence("held", held(limit_usd=Decimal("0.2"), resumes_at=resets), NOON) == (
        "demo is held: $0.20 spent today, of $0.20 a day. It starts no new turn until "
        "00:00 UTC, in 12h 00m, or until the limit is raised."
    )
    unreadable = held(limit_usd=Decimal(1), hold_reason="unreadable")
    assert sentence("held", unreadable, NOON) == (
        "demo is held: a row of its spend today is not an amount, so no call of its could be"
        " counted. It starts no new turn until that row reads again."
    )


async def test_the_day_turning_over_resumes_a_held_agent_and_says_so(start_plane, receiver):
    from datetime import timedelta

    plane = await start_plane(notifying(receiver, ntfy=False))
    plane.llm.reply("All of it.", usage=Usage(input_tokens=1100))  # $1.10 of $1.00
    await plane.turn("demo", "spend")
    await plane.runtime.notifier.drained()
    await plane.clock.advance(timedelta(hours=12))  # 00:00 UTC
    await receiver.until_hook("resumed")
    events = [(h["event"], h["text"]) for h in receiver.hooks()]
    assert [e for e, _ in events][-1] == "resumed"
    assert events[-1][1] == "demo has resumed: $0.00 spent today, of $1.00 a day."


async def test_pausing_a_held_agent_does_not_say_it_resumed(start_plane, receiver):
    """A pause is one more reason to take no turn, never a resume: the phone
    told `demo has resumed` while demo, paused, still takes none would send
    the operator to look for answers that never come. Resumed from the
    pause into its ceiling's hold, it is said held again, as it is."""
    plane = await start_plane(notifying(receiver, ntfy=False))
    plane.llm.reply("All of it.", usage=Usage(input_tokens=1100))  # $1.10 of $1.00
    await plane.turn("demo", "spend")
    await receiver.until_hook("held")
    client = await plane.client()
    await client.request(p.PauseAgent(agent="demo", paused=True))
    await client.request(p.PauseAgent(agent="demo", paused=False))
    await receiver.until_hook("held", count=2)
    said = [h["event"] for h in receiver.hooks() if h["event"] in ("held", "resumed")]
    assert said == ["held", "held"]


async def test_a_stop_cut_while_alerts_close_is_not_swallowed(receiver):
    """The plane's stop may itself be cancelled while the alerts close: that
    cancellation ends the closing (it is not swallowed while a task of the
    alerts ends), and the receivers' connections are closed all the same."""
    notifier = _notifier(f"{receiver.url}/hook", retries=0)
    notifier.start(EventBus(), _empty())
    notifier.tell(Alert("held", "demo", "demo is held.", NOON))
    await notifier.drained()
    closing = asyncio.create_task(notifier.aclose())
    await asyncio.sleep(0)  # it has cancelled the watching and waits for it to end
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing


async def unpriced_resumed_then_held(start_plane, receiver):
    """demo on a model with no known price: resumed with no ceiling, a call
    made, then held by a ceiling of $5 (no turn on no known price). Every
    alert received by then."""
    config = notifying(receiver, ntfy=False).replace("  demo: {}", "  demo: {model: other-model}")
    plane = await start_plane(config)
    await plane.send("demo", "/limit off")  # no ceiling: it takes turns, unpriced
    await receiver.until_hook("resumed")
    plane.llm.reply("ok", usage=Usage(input_tokens=420))
    await plane.turn("demo", "work")
    await plane.send("demo", "/limit 5")  # a ceiling on no known price: held
    await receiver.until_hook("held")
    await plane.runtime.notifier.drained()
    return plane


async def test_an_unpriced_agents_held_and_resumed_alerts_say_its_spend_as_its_row(
    start_plane, receiver
):
    """On a model with no known price its calls count $0, which is not what
    they cost: the held and resumed alerts say `$?` spent, as its row,
    `plane status` and `/limit` do, never `$0.00`."""
    plane = await unpriced_resumed_then_held(start_plane, receiver)
    said = [(h["event"], h["text"]) for h in receiver.hooks()]
    assert said == [
        ("resumed", "demo has resumed: $? spent today, against no limit."),
        (
            "held",
            "demo is held: $? spent today, of $5.00 a day. It starts no new turn until "
            "other-model has a price under `pricing:` in agents.yaml.",
        ),
    ]
    assert (await plane.rows.state("demo")).price_known is False


async def test_amber_priced_at_a_floor_says_its_spend_as_its_row(start_gateway, receiver):
    """A gateway call the upstream answered with a model that has no known
    price is charged as the one asked for, a floor: the amber warning, in
    the conversation and in the alert, says `$0.85+$?` as the agent's row
    does, not a spend that reads as all of it."""
    gw = await start_gateway(GATEWAY + f"notify:\n  webhook: {receiver.url}/hook\n  retries: 0\n")
    await gw.services.gate.ceilings.set("aider", Decimal(1))
    path, heads = gw.calls_as("aider")
    usage = {"prompt_tokens": 340_000, "completion_tokens": 0}  # $0.85 as gpt-4o
    gw.llm.fault(200, body=chat_reply(usage, "other"))
    async with local_client(base_url=gw.url, timeout=20) as http:
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
        answer = await http.post(path, json=body, headers=heads)
        assert answer.status_code == 200, answer.text
    await receiver.until_hook("amber")
    said = "aider has spent $0.85+$? today, 85% of its $1.00 daily ceiling."
    assert [h["text"] for h in receiver.hooks() if h["event"] == "amber"] == [said]
    assert said in [m.text for m in await gw.said("aider")]
    [amber] = receiver.hooks()
    assert (amber["spend_today_usd"], amber["price_known"], amber["floor_priced"]) == (
        "0.85",
        True,
        True,
    )  # at least $0.85: its webhook's receiver can tell


async def test_an_unpriced_agents_webhook_says_its_spend_has_no_price(start_plane, receiver):
    """On a model with no known price its calls count $0, which is not what
    they cost: the webhook's JSON still carries `spend_today_usd: "0"`, as
    receivers parse it, and says beside it that the price is not known."""
    await unpriced_resumed_then_held(start_plane, receiver)
    said = [
        (h["event"], h["spend_today_usd"], h["price_known"], h["floor_priced"])
        for h in receiver.hooks()
    ]
    assert said == [("resumed", "0", False, False), ("held", "0", False, False)]
