"""One-tap approval on the plane's `--http` listener: the raise an alert
offers, made and recorded (`offer`), and the link that answers it followed
(`GET` and `POST /approve`).

`GET` only shows what the link would do, with a button that POSTs it: link
previews, chat unfurlers and mail scanners fetch what they see, and a fetch
must change nothing. `POST` applies it (ntfy's `http` action buttons POST
too: one tap on the phone). Applied, a raise is the operator's for the rest
of the day (`Ceilings.raise_until`) and the conversation says so like a
`/limit` (`Raised to $7.00 until 00:00 UTC from the alert.`); a Deny is said
as well. The answer to the phone is one line.

Every refusal changes nothing and says why in one line, checked in this
order: not a link at all; the signature (a forged link, or one whose agent,
amount or times were changed: the offer on record says which); the day
over (after midnight) or the link expired; the offer answered already (a
link is single-use, and a raise and its Deny share one offer); the agent
gone; the ceiling changed since the alert (the link raises *from* the
ceiling it saw: an old link never lowers a ceiling raised since).
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from aiohttp import web

from plane.agents import notices
from plane.agents.rows import Rows
from plane.agents.services import Services
from plane.agents.workers import Workers
from plane.clock import midnight_after
from plane.config import NotifyConfig
from plane.daemon.alert import Alert, Links
from plane.daemon.failed import store_away
from plane.errors import StoreError
from plane.money import approvals
from plane.money.approvals import AlreadyAnswered, Link, NotALink, Recorded, Signer
from plane.store.engine import Database
from plane.wire.words import usd_exact

log = logging.getLogger(__name__)

NOTHING = "nothing changed."


@dataclass(frozen=True)
class Verdict:
    """What following a link came to: an HTTP status and the one line."""

    status: int
    line: str
    link: Link | None = None


class Approvals:
    def __init__(
        self,
        services: Services,
        rows: Rows,
        workers: Workers,
        db: Database,
        signer: Signer,
        config: NotifyConfig,
        base_url: Callable[[], str | None],
    ) -> None:
        self._services = services
        self._rows = rows
        self._workers = workers
        self._db = db
        self._signer = signer
        self._config = config
        self._base_url = base_url
        """Where the links point: `notify.approve_url`, else the listener's own address."""

    # ── the offer, with the alert ──────────────────────────────────────────

    async def offer(self, alert: Alert) -> Links | None:
        """The raise `alert` offers, recorded; None when it offers none."""
        base = self._config.approve_url or self._base_url()
        amounts = self._amounts(alert)
        if base is None or amounts is None:
            return None
        clock = self._services.clock
        made = approvals.offer(alert.agent, *amounts, self._services.ledger.day(), clock.now())
        await approvals.record(self._db, made, clock.now())
        return Links(
            made, self._signer.link(base, "raise", made), self._signer.link(base, "deny", made)
        )

    def _amounts(self, alert: Alert) -> tuple[Decimal, Decimal] | None:
        """(from, to): a held agent's ceiling and that plus `raise_usd` (or
        40%); a refused ask's ceiling and what it asked for. None for a hold
        a raise would not end: a pause (a zero ceiling), an unpriced model,
        the fleet's ceiling."""
        if alert.kind == "ask_refused":
            has = self._services.gate.ceilings.of(alert.agent)
            if has is None:
                return None
            asked = alert.asked
            more = has + approvals.hold_raise(has, self._config.raise_usd)
            return has, asked if asked is not None and asked > has else more
        state = alert.state
        if state is None or state.limit_usd is None or not state.limit_usd:
            return None
        if not state.price_known or state.spend_today_usd < state.limit_usd:
            return None
        has = state.limit_usd
        return has, has + approvals.hold_raise(has, self._config.raise_usd)

    # ── the link, followed ─────────────────────────────────────────────────

    async def handle(self, request: web.Request) -> web.Response:
        """`/approve`: GET shows, POST applies. Never cached, never framed,
        its address never sent on as a referrer (it is the capability)."""
        query = {key: request.query.getone(key) for key in request.query}
        if len(query) != len(request.query):  # a field given twice: which one was signed?
            verdict = Verdict(400, _not_a_link())
        else:
            verdict = await self._verdict(query, follow=request.method == "POST")
        if verdict.status == 200 and request.method != "POST" and verdict.link is not None:
            response = web.Response(text=_page(verdict.link), content_type="text/html")
        else:
            response = web.Response(status=verdict.status, text=verdict.line + "\n")
        response.headers.update(
            {
                "Cache-Control": "no-store",
                "Referrer-Policy": "no-referrer",
                "Content-Security-Policy": "default-src 'none'; form-action 'self'; "
                "frame-ancestors 'none'",
            }
        )
        return response

    async def _verdict(self, query: dict[str, str], *, follow: bool) -> Verdict:
        """`follow` or `check`; the store away is said as every request of
        the plane's says it, and an offer no plane wrote as the start says a
        row it cannot read, not as a bare server error."""
        try:
            return await (self.follow(query) if follow else self.check(query))
        except StoreError as exc:  # its offer's row no plane wrote: one sentence names it
            log.warning("an approval link: %s", exc)
            return Verdict(500, str(exc))
        except Exception as exc:
            if (said := store_away(exc, changes=follow)) is None:
                raise
            log.warning("an approval link: the store is away: %s", exc)
            return Verdict(503, said)

    async def check(self, query: dict[str, str]) -> Verdict:
        """What following the link would do, or why it would not: nothing changes."""
        try:
            link = approvals.read(query)
        except NotALink:
            return Verdict(400, _not_a_link())
        kept = await approvals.recorded(self._db, link.nonce)
        if not self._signer.genuine(query):
            return Verdict(403, _altered(link, kept))
        # Its own signed times first: an expired offer is forgotten by the next one made.
        now = self._services.clock.now()
        if self._services.ledger.day() > link.day:  # the plane's: a clock stepped back ends none
            ended = f"This link was for {link.day}, which ended at 00:00 UTC"
            return Verdict(410, f"{ended}; {NOTHING}")
        if now >= link.expires_at:
            return Verdict(410, f"This link expired at {link.expires_at:%H:%M} UTC; {NOTHING}")
        if kept is None:
            return Verdict(403, f"This plane made no such offer; {NOTHING}")
        if kept.answer is not None:
            return Verdict(409, _used(kept))
        if link.agent not in self._workers:
            return Verdict(404, f"There is no agent {link.agent} on this plane now; {NOTHING}")
        has = self._services.gate.ceilings.of(link.agent)
        if has != link.from_usd:
            now_has = "no ceiling" if has is None else f"a ceiling of {usd_exact(has)} a day"
            return Verdict(
                409,
                f"{link.agent} has {now_has} now, not the {usd_exact(link.from_usd)} this "
                f"link raises from; {NOTHING}",
            )
        return Verdict(200, "", link)

    async def follow(self, query: dict[str, str]) -> Verdict:
        """Apply the link, as the operator, if `check` finds nothing against it."""
        verdict = await self.check(query)
        if verdict.status != 200 or verdict.link is None:
            return verdict
        link = verdict.link
        try:
            if link.answer == "raise":
                return await self._raise(link)
            return await self._deny(link)
        except AlreadyAnswered:  # another request answered it first
            kept = await approvals.recorded(self._db, link.nonce)
            assert kept is not None
            return Verdict(409, _used(kept))

    async def _raise(self, link: Link) -> Verdict:
        services, now = self._services, self._services.clock.now()
        await services.gate.ceilings.raise_until(
            link.agent,
            link.to_usd,
            midnight_after(link.day),
            lambda conn: approvals.answer_within(conn, link.nonce, "raise", now),
        )
        to = usd_exact(link.to_usd)
        await services.add_message(link.agent, "plane", notices.raised(link.to_usd))
        await self._rows.publish(link.agent)
        self._workers.wake(link.agent)
        return Verdict(200, f"{link.agent}: raised to {to} until 00:00 UTC.", link)

    async def _deny(self, link: Link) -> Verdict:
        services, now = self._services, self._services.clock.now()
        await self._db.write(lambda conn: approvals.answer_within(conn, link.nonce, "deny", now))
        has = usd_exact(link.from_usd)
        await services.add_message(link.agent, "plane", notices.declined(link.to_usd))
        await self._rows.publish(link.agent)
        return Verdict(200, f"{link.agent}: declined; its ceiling stays {has} a day.", link)


def _not_a_link() -> str:
    return f"This is not an approval link of this plane; {NOTHING}"


def _altered(link: Link, kept: Recorded | None) -> str:
    """Why a link's signature does not hold, as far as the offer on record tells."""
    if kept is None:
        return f"This link is not signed by this plane; {NOTHING}"
    if kept.agent != link.agent:
        return f"This link was made for {kept.agent}, not {link.agent}; {NOTHING}"
    if (kept.from_usd, kept.to_usd) != (link.from_usd, link.to_usd):
        return (
            f"This link raises {kept.agent} to {usd_exact(kept.to_usd)}, not "
            f"{usd_exact(link.to_usd)}; {NOTHING}"
        )
    return f"This link was changed after it was signed; {NOTHING}"


def _used(kept: Recorded) -> str:
    what = f"raised to {usd_exact(kept.to_usd)}" if kept.answer == "raise" else "declined"
    when = "" if kept.answered_at is None else f" at {kept.answered_at:%H:%M} UTC"
    return f"This alert was already answered{when} ({what}); {NOTHING}"


def _page(link: Link) -> str:
    """The confirmation a GET shows: what the link does, and a button that does it."""
    agent, to = html.escape(link.agent), usd_exact(link.to_usd)
    if link.answer == "raise":
        what = f"Raise {agent}'s ceiling to {to} until 00:00 UTC"
        button = f"Raise to {to}"
    else:
        what = f"Decline the raise of {agent}'s ceiling to {to}"
        button = "Decline"
    return (
        "<!doctype html><html><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width">'
        f"<title>plane: {agent}</title></head><body>"
        f"<p>{what}? It is {usd_exact(link.from_usd)} a day now.</p>"
        f'<form method=post><button type=submit style="font-size:1.5em">{button}</button>'
        "</form></body></html>"
    )
