"""One-tap approval: a held agent's alert carries ntfy action buttons and the
same signed links in the webhook's JSON; tapping the raise (as ntfy's app
does) raises the ceiling until 00:00 UTC as the operator's, says so in the
conversation and answers the phone in one line; the raise ends at midnight
by itself, survives a restart, and `/limit` afterwards does what it says.
(The links attacked: tests/attack/test_approval_links.py.)"""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from plane.cli.manage import shown
from plane.wire import protocol as p
from plane.wire.protocol import Usage
from tests.support.approving import HTTP, approving, get, held_links, held_plane, post, rows
from tests.support.fixtures_alerts import tap


async def test_a_held_agents_alert_has_buttons_and_a_tap_raises_it_until_midnight(
    start_plane, receiver
):
    plane = await held_plane(start_plane, receiver)
    await plane.send("demo", "are you there?")  # kept, held
    [(title, _)] = receiver.topics()
    assert title == "plane: demo is held"
    [buttons] = [b for b in receiver.buttons() if b]
    assert [(b.action, b.label, b.method, b.clear) for b in buttons] == [
        ("http", "+$0.40 today", "POST", True),
        ("http", "Deny", "POST", True),
    ]
    links = held_links(receiver)  # the webhook carries the same links
    assert links == {"+$0.40 today": buttons[0].url, "Deny": buttons[1].url}
    [held] = [h for h in receiver.hooks() if h["event"] == "held"]
    assert held["raise"] == {
        "from_usd": "1",
        "to_usd": "1.4",
        "until": "00:00 UTC",
        "expires_at": "2026-11-29T18:00:00+00:00",
    }
    assert buttons[0].url.startswith(f"http://127.0.0.1:{plane.plane.http_port}/approve?")

    plane.llm.reply("Yes, here.", usage=Usage(input_tokens=10))
    watching = plane.bus.subscribe()
    answer = await tap(buttons[0])
    assert (answer.status_code, answer.text) == (200, "demo: raised to $1.40 until 00:00 UTC.\n")
    said = await plane.until_turn_ends("demo", watching)
    assert said[0].text == "Raised to $1.40 until 00:00 UTC from the alert."
    assert said[0].kind == "plane"
    assert "Yes, here." in [m.text for m in said]  # what waited is answered
    assert plane.services.gate.ceilings.of("demo") == Decimal("1.40")
    await receiver.until_hook("resumed")


async def test_a_get_only_shows_what_the_link_would_do(start_plane, receiver):
    """A link preview or a mail scanner fetches the link: nothing changes."""
    plane = await held_plane(start_plane, receiver)
    raise_url = held_links(receiver)["+$0.40 today"]
    page = await get(raise_url)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "Raise demo's ceiling to $1.40 until 00:00 UTC? It is $1.00 a day now." in page.text
    assert "<form method=post>" in page.text
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert plane.services.gate.ceilings.of("demo") == Decimal("1.00")
    assert await rows(plane, "SELECT answer FROM offers") == [(None,)]
    assert (await post(raise_url)).status_code == 200  # the page's button: a POST


async def test_deny_is_said_and_answers_the_offer(start_plane, receiver):
    plane = await held_plane(start_plane, receiver)
    links = held_links(receiver)
    answer = await post(links["Deny"])
    assert (answer.status_code, answer.text) == (
        200,
        "demo: declined; its ceiling stays $1.00 a day.\n",
    )
    [*_, last] = await plane.services.conversation.history("demo", 5)
    assert last.text == "The operator declined the raise to $1.40 from the alert."
    late = await post(links["+$0.40 today"])  # one offer, one answer
    assert (late.status_code, late.text) == (
        409,
        "This alert was already answered at 12:00 UTC (declined); nothing changed.\n",
    )
    assert plane.services.gate.ceilings.of("demo") == Decimal("1.00")


@pytest.mark.usefixtures("each_store")
async def test_the_raise_ends_at_midnight_by_itself_and_survives_a_restart(start_plane, receiver):
    plane = await held_plane(start_plane, receiver)
    assert (await post(held_links(receiver)["+$0.40 today"])).status_code == 200
    plane = await start_plane(restart=plane)  # the raise is in the store
    ceilings = plane.services.gate.ceilings
    assert ceilings.of("demo") == Decimal("1.40")
    details = await (await plane.client()).request(p.ShowAgent(agent="demo"))
    assert isinstance(details, p.ShowAgentReply)
    assert "  ceiling    $1.40 a day, raised from an alert until 00:00 UTC" in shown(details)

    watching = plane.bus.subscribe()
    await plane.clock.set(datetime(2026, 11, 30, tzinfo=UTC))  # nothing else happens
    while not isinstance(event := await watching.next(), p.DayRolled):
        pass
    [demo] = [a for a in event.snapshot.agents if a.name == "demo"]
    assert demo.limit_usd == Decimal("1.00")
    assert ceilings.of("demo") == Decimal("1.00") and ceilings.source("demo") == "file"


async def test_limit_after_a_raise_says_it_and_replaces_it(start_plane, receiver):
    plane = await held_plane(start_plane, receiver)
    assert (await post(held_links(receiver)["+$0.40 today"])).status_code == 200
    [_, reply] = await plane.send("demo", "/limit")
    assert reply.text == (
        "$1.05 spent today, of $1.40 a day. Raised until 00:00 UTC from the alert; "
        "$1.00 a day after."
    )
    [_, reply] = await plane.send("demo", "/limit 3")
    assert reply.text == "Spending limit set to $3.00 a day. $1.05 spent today, of $3.00 a day."
    assert await rows(plane, "SELECT * FROM raises") == []
    await plane.clock.advance(timedelta(hours=13))  # the next day: the operator's $3 stays
    assert plane.services.gate.ceilings.of("demo") == Decimal(3)


async def test_a_refused_ask_offers_what_it_asked_for(start_plane, receiver):
    plane = await start_plane(approving(receiver), http=HTTP)
    plane.llm.reply("", tool_calls=[("set_own_limit", {"usd": "5"})], usage=Usage())
    plane.llm.reply("Asked.", usage=Usage())
    await plane.turn("demo", "ask for more")
    await receiver.until_hook("ask_refused")
    [refused] = [h for h in receiver.hooks() if h["event"] == "ask_refused"]
    assert [a["label"] for a in refused["actions"]] == ["+$4 today", "Deny"]
    assert (refused["raise"]["from_usd"], refused["raise"]["to_usd"]) == ("1", "5")
    answer = await post(refused["actions"][0]["url"])
    assert answer.text == "demo: raised to $5.00 until 00:00 UTC.\n"
    assert plane.services.gate.ceilings.of("demo") == Decimal(5)


async def test_raise_usd_sets_the_amount(start_plane, receiver):
    await held_plane(start_plane, receiver, extra="  raise_usd: 2.5\n")
    assert list(held_links(receiver)) == ["+$2.50 today", "Deny"]


async def test_approve_false_offers_none(start_plane, receiver):
    await held_plane(start_plane, receiver, extra="  approve: false\n")
    [held] = [h for h in receiver.hooks() if h["event"] == "held"]
    assert "actions" not in held and receiver.buttons() == [[]]


async def test_without_the_http_listener_no_buttons_are_offered(start_plane, receiver):
    plane = await start_plane(approving(receiver))
    plane.llm.reply("All of it.", usage=Usage(input_tokens=1050))
    await plane.turn("demo", "spend")
    await receiver.until_hook("held")
    await receiver.until_topics(1)
    assert "actions" not in receiver.hooks()[0] and receiver.buttons() == [[]]


async def test_a_pause_is_offered_no_raise(start_plane, receiver):
    """A zero ceiling is the operator's pause: a raise would not be what they meant."""
    plane = await start_plane(approving(receiver), http=HTTP)
    await plane.send("demo", "/limit 0")
    await receiver.until_hook("held")
    await plane.runtime.notifier.drained()
    assert "actions" not in receiver.hooks()[0]
