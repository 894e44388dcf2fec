"""An alert's approval link attacked: forged, replayed, expired, used on
another agent, its amount altered, followed after midnight, its fields
doubled, two taps racing, a link of another plane's. Each is refused with
its own line and changes nothing: no ceiling, no raise, no answer recorded,
no line in the conversation. What a link may do is README "Guard rails"'s
promise: single-use, expiring, naming its agent and amount, signed."""

import asyncio
import secrets
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest

from plane.money.approvals import Offer, Signer
from tests.support.approving import altered, held_links, held_plane, post, standing
from tests.support.local_http import local_client


async def refused(plane, url: str, status: int, line: str) -> None:
    """`url` POSTed is refused with `line`, and nothing changed."""
    before = await standing(plane)
    answer = await post(url)
    assert (answer.status_code, answer.text) == (status, line + "\n")
    assert await standing(plane) == before


@pytest.fixture
async def held(start_plane, receiver):
    plane = await held_plane(start_plane, receiver)
    return plane, held_links(receiver)


async def test_a_forged_link_is_refused(held):
    plane, links = held
    stranger = Signer(secrets.token_bytes(32))  # a key that is not the plane's
    base = links["Deny"].split("/approve?")[0]
    made = Offer(
        secrets.token_urlsafe(16),
        "demo",
        Decimal(1),
        Decimal(100),
        date(2026, 11, 29),
        datetime(2026, 11, 29, 18, tzinfo=UTC),
    )
    await refused(
        plane,
        stranger.link(base, "raise", made),
        403,
        "This link is not signed by this plane; nothing changed.",
    )
    signature = "0" * 64
    await refused(
        plane,
        altered(links["+$0.40 today"], sig=signature),
        403,
        "This link was changed after it was signed; nothing changed.",
    )


async def test_a_link_signed_by_another_plane_is_refused(held, tmp_path):
    """Every plane's key is its own (made once in its home)."""
    from plane.home import Home

    plane, links = held
    other = Home(tmp_path / "other").ensure()
    theirs = Signer(other.make_approvals_key())
    assert other.approvals_key.stat().st_mode & 0o777 == 0o600
    nonce = dict(p.split("=") for p in links["Deny"].split("?")[1].split("&"))["n"]
    made = Offer(
        nonce,
        "demo",
        Decimal(1),
        Decimal("1.40"),
        date(2026, 11, 29),
        datetime(2026, 11, 29, 18, tzinfo=UTC),
    )
    await refused(
        plane,
        theirs.link(links["Deny"].split("/approve?")[0], "raise", made),
        403,
        "This link was changed after it was signed; nothing changed.",
    )


@pytest.mark.usefixtures("each_store")
async def test_a_link_is_single_use(held):
    plane, links = held
    assert (await post(links["+$0.40 today"])).status_code == 200
    await refused(
        plane,
        links["+$0.40 today"],
        409,
        "This alert was already answered at 12:00 UTC (raised to $1.40); nothing changed.",
    )
    await refused(  # its Deny answers the same offer
        plane,
        links["Deny"],
        409,
        "This alert was already answered at 12:00 UTC (raised to $1.40); nothing changed.",
    )


@pytest.mark.usefixtures("each_store")
async def test_two_taps_at_once_apply_once(held):
    plane, links = held
    answers = await asyncio.gather(*(post(links["+$0.40 today"]) for _ in range(8)))
    assert sorted(a.status_code for a in answers) == [200] + [409] * 7
    said = await plane.services.conversation.history("demo", 50)
    assert [m.text for m in said].count("Raised to $1.40 until 00:00 UTC from the alert.") == 1


async def test_an_expired_link_is_refused(held):
    plane, links = held
    await plane.clock.advance(timedelta(hours=6))  # the alert came at 12:00
    await refused(
        plane, links["+$0.40 today"], 410, "This link expired at 18:00 UTC; nothing changed."
    )


async def test_a_link_for_another_agent_is_refused(held):
    plane, links = held
    await plane.send("scout", "/limit 0")  # held too: a raise would free it
    await refused(
        plane,
        altered(links["+$0.40 today"], agent="scout"),
        403,
        "This link was made for demo, not scout; nothing changed.",
    )


async def test_an_altered_amount_is_refused(held):
    plane, links = held
    await refused(
        plane,
        altered(links["+$0.40 today"], to="50.00"),
        403,
        "This link raises demo to $1.40, not $50.00; nothing changed.",
    )
    await refused(  # the time it expires, moved on
        plane,
        altered(links["+$0.40 today"], exp="9999999999"),
        403,
        "This link was changed after it was signed; nothing changed.",
    )


async def test_a_link_after_midnight_is_refused(start_plane, receiver):
    """An alert at 22:00: its link ends at 00:00 UTC with the day it raises."""
    from plane.clock import ManualClock

    plane = await held_plane(
        start_plane, receiver, clock=ManualClock(datetime(2026, 11, 29, 22, tzinfo=UTC))
    )
    links = held_links(receiver)
    await plane.clock.set(datetime(2026, 11, 30, 0, 0, 30, tzinfo=UTC))
    await refused(
        plane,
        links["+$0.40 today"],
        410,
        "This link was for 2026-11-29, which ended at 00:00 UTC; nothing changed.",
    )


async def test_a_link_from_before_the_ceiling_changed_is_refused(held):
    """Raised since by /limit: the old link would lower it."""
    plane, links = held
    await plane.send("demo", "/limit 2")
    await refused(
        plane,
        links["+$0.40 today"],
        409,
        "demo has a ceiling of $2.00 a day now, not the $1.00 this link raises from; "
        "nothing changed.",
    )


@pytest.mark.parametrize(
    "breaking",
    [
        {"sig": "zz"},
        {"to": "1.4"},
        {"to": "-1.40"},
        {"agent": "../demo"},
        {"do": "delete"},
        {"day": "2026-13-40"},
        {"exp": "99999999999999999999"},
        {"n": "x"},
    ],
)
async def test_a_malformed_link_is_refused(held, breaking):
    plane, links = held
    await refused(
        plane,
        altered(links["+$0.40 today"], **breaking),
        400,
        "This is not an approval link of this plane; nothing changed.",
    )


async def test_a_field_given_twice_is_refused(held):
    plane, links = held
    await refused(
        plane,
        links["+$0.40 today"] + "&to=50.00",
        400,
        "This is not an approval link of this plane; nothing changed.",
    )


async def test_a_fetch_changes_nothing_whatever_the_method(held):
    """Previews GET, HEAD; some proxies try others: only POST applies."""

    plane, links = held
    before = await standing(plane)
    async with local_client() as client:
        for method in ("GET", "HEAD", "PUT", "DELETE"):
            await client.request(method, links["+$0.40 today"])
    assert await standing(plane) == before
