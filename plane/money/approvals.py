"""One-tap approval: the raise an alert offers, and the signed links that
answer it (README, "Guard rails").

An **offer** is a raise of one agent's ceiling from what it is now (`from`)
to more (`to`) until 00:00 UTC, made when the agent is held at its ceiling or
is refused a looser one it asked for. It is recorded (table `offers`) before
its alert is sent, and answered at most once: its two links, *raise* and
*deny*, share it, so answering one uses both.

A **link** names everything it does in its query — the answer, the agent,
`from`, `to`, the day, when it expires, the offer's nonce — and carries an
HMAC-SHA256 of all of them under the plane's own key (`approvals-key` in
the home, 0600, made once): none of them can be changed, and no link can be
made, without the key, which nothing an agent runs can read. Planes sharing
one store share one key, the first one's, kept in the store (`fleet_key`):
a link one plane made is followed on any (a proxy in front of them all, or
the plane that made it stopped). A link expires
`LINK_TTL` after its alert or at 00:00 UTC, whichever is first: the raise it
offers is for that day only.

This module is the words, the amounts, the signature and the SQL; following
a link (and what it changes) is `plane.daemon.approvals`'s.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from sqlite3 import Connection
from typing import Literal
from urllib.parse import urlencode

from plane.config import AGENT_NAME
from plane.money.stored import amount, moment
from plane.store.engine import Database
from plane.wire.words import usd_exact

Answer = Literal["raise", "deny"]
LINK_TTL = timedelta(hours=6)
"""How long a link works, at most: an alert seen at breakfast still answers
the night's hold, and a link found in a chat log a week later does nothing."""
HOLD_SHARE = Decimal("0.4")
"""A held agent is offered this share of its ceiling more, unless
`notify.raise_usd` says how much."""
_SIGNED = ("do", "agent", "from", "to", "day", "exp", "n")
_AMOUNT = re.compile(r"^[0-9]{1,7}\.[0-9]{2}$")
_NONCE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
_SIGNATURE = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Offer:
    nonce: str
    agent: str
    from_usd: Decimal
    to_usd: Decimal
    day: date
    """The plane's day the raise is for; it ends at 00:00 UTC after it."""
    expires_at: datetime

    @property
    def label(self) -> str:
        """The raise's button: `+$2 today`, `+$0.40 today`."""
        by = self.to_usd - self.from_usd
        shown = f"${by:,.0f}" if by == by.to_integral_value() else usd_exact(by)
        return f"+{shown} today"


@dataclass(frozen=True)
class Link:
    """A link as it was followed: what its query says, not yet believed."""

    answer: Answer
    agent: str
    from_usd: Decimal
    to_usd: Decimal
    day: date
    expires_at: datetime
    nonce: str
    signature: str


class NotALink(ValueError):
    """A query that is not the shape of an approval link at all."""


def hold_raise(ceiling: Decimal, configured: Decimal | None) -> Decimal:
    """What a held agent's alert offers to add: `notify.raise_usd`, else 40%
    of its ceiling, in whole dollars once that is a dollar or more."""
    if configured is not None:
        return configured
    share = ceiling * HOLD_SHARE
    step = Decimal(1) if share >= 1 else Decimal("0.01")
    return max(share.quantize(step, rounding=ROUND_HALF_UP), Decimal("0.01"))


def offer(agent: str, from_usd: Decimal, to_usd: Decimal, day: date, now: datetime) -> Offer:
    """A new offer, its nonce fresh, expiring within `LINK_TTL` and its day."""
    midnight = datetime.combine(day + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    return Offer(
        secrets.token_urlsafe(16), agent, from_usd, to_usd, day, min(now + LINK_TTL, midnight)
    )


FLEET_KEY = (
    "INSERT INTO fleet_secrets (name, secret) VALUES ('approvals', ?) ON CONFLICT (name) DO NOTHING"
)
"""This plane's key offered as the fleet's, kept if no plane's was before."""


async def fleet_key(db: Database, mine: bytes) -> bytes:
    """The key the links of planes sharing `db` are signed with: the first
    plane's (`mine`, this one's home key, if it is first), so every plane
    checks every plane's links."""

    def shared(conn: Connection) -> str:
        conn.execute(FLEET_KEY, (mine.decode(),))
        row = conn.execute("SELECT secret FROM fleet_secrets WHERE name = 'approvals'").fetchone()
        return str(row[0])

    return (await db.write(shared)).encode()


class Signer:
    """Links signed and checked under the plane's key."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def link(self, base: str, answer: Answer, offer: Offer) -> str:
        fields = {
            "do": answer,
            "agent": offer.agent,
            "from": f"{offer.from_usd:.2f}",
            "to": f"{offer.to_usd:.2f}",
            "day": offer.day.isoformat(),
            "exp": str(int(offer.expires_at.timestamp())),
            "n": offer.nonce,
        }
        return f"{base.rstrip('/')}/approve?{urlencode({**fields, 'sig': self._sign(fields)})}"

    def genuine(self, query: Mapping[str, str]) -> bool:
        """Whether the query's fields are the ones the key signed (compared in constant time)."""
        fields = {name: query.get(name, "") for name in _SIGNED}
        return hmac.compare_digest(self._sign(fields), query.get("sig", ""))

    def _sign(self, fields: Mapping[str, str]) -> str:
        message = "\n".join(["plane approval 1", *(fields[name] for name in _SIGNED)])
        return hmac.new(self._key, message.encode(), hashlib.sha256).hexdigest()


def read(query: Mapping[str, str]) -> Link:
    """The link a query is, or `NotALink`: every field there, each in its shape."""
    try:
        answer, agent = query["do"], query["agent"]
        amounts = query["from"], query["to"]
        day, expires, nonce, signature = query["day"], query["exp"], query["n"], query["sig"]
        if answer not in ("raise", "deny") or not AGENT_NAME.match(agent):
            raise NotALink
        if not all(_AMOUNT.match(a) for a in amounts) or not expires.isdigit():
            raise NotALink
        if not _NONCE.match(nonce) or not _SIGNATURE.match(signature):
            raise NotALink
        return Link(
            "raise" if answer == "raise" else "deny",
            agent,
            Decimal(amounts[0]),
            Decimal(amounts[1]),
            date.fromisoformat(day),
            datetime.fromtimestamp(int(expires[:12]), UTC),
            nonce,
            signature,
        )
    except (KeyError, ValueError, OverflowError, OSError):
        raise NotALink from None


# ── the store ──────────────────────────────────────────────────────────────


async def record(db: Database, made: Offer, now: datetime) -> None:
    """Keep `made` before its alert is sent; forget offers that have expired."""
    row = (
        made.nonce, made.agent, str(made.from_usd), str(made.to_usd), made.day.isoformat(),
        made.expires_at.isoformat(), now.isoformat(),
    )  # fmt: skip

    def keep(conn: Connection) -> None:
        conn.execute("DELETE FROM offers WHERE expires_at < ?", (now.isoformat(),))
        conn.execute(
            "INSERT INTO offers (nonce, agent, from_usd, to_usd, day, expires_at, made_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            row,
        )

    await db.write(keep)


@dataclass(frozen=True)
class Recorded:
    """An offer as the store keeps it, and how it was answered."""

    agent: str
    from_usd: Decimal
    to_usd: Decimal
    answer: str | None
    answered_at: datetime | None


async def recorded(db: Database, nonce: str) -> Recorded | None:
    row = await db.fetchone(
        "SELECT agent, from_usd, to_usd, answer, answered_at FROM offers WHERE nonce = ?", nonce
    )
    if row is None:
        return None
    # A row no plane wrote (edited by hand) is refused (StoreError) in the
    # start's sentence naming it: a raise's amounts are never taken for others.
    answered, named = row["answered_at"], f"offer {nonce} of {row['agent']}"
    return Recorded(
        row["agent"],
        amount("offers", named, "from_usd", row["from_usd"]),
        amount("offers", named, "to_usd", row["to_usd"]),
        row["answer"],
        None if answered is None else moment("offers", named, "answered_at", answered),
    )


class AlreadyAnswered(Exception):
    """The offer was answered by another request first (raised inside the write)."""


def answer_within(conn: Connection, nonce: str, answer: Answer, now: datetime) -> None:
    """Mark the offer answered, in the caller's transaction; `AlreadyAnswered`
    (which rolls the transaction back) when another request was first."""
    changed = conn.execute(
        "UPDATE offers SET answer = ?, answered_at = ? WHERE nonce = ? AND answer IS NULL",
        (answer, now.isoformat(), nonce),
    ).rowcount
    if changed != 1:
        raise AlreadyAnswered
