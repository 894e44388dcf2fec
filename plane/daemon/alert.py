"""An alert: what it says and what it carries (ntfy's title and tags, the
webhook's JSON, the raise it offers), whichever part of the plane made it
and whichever receiver sends it (plane/daemon/alerts.py says when each is
made; plane/daemon/alert_receivers.py sends them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from plane.agents.guard import Loop
from plane.agents.notices import warning
from plane.clock import until
from plane.config import AlertKind
from plane.daemon.alert_folds import Folded, agents
from plane.money.approvals import Offer
from plane.money.burn import Spike
from plane.money.limits import Priced, standing
from plane.wire.protocol import AgentState
from plane.wire.words import NAMED, plain

TITLES: dict[AlertKind, str] = {
    "amber": "is amber",
    "held": "is held",
    "resumed": "resumed",
    "ask_refused": "asked for more",
    "spike": "is burning fast",
    "loop": "is held in a loop",
    "tag": "reached its ceiling",
}
TAGS: dict[AlertKind, str] = {
    "amber": "warning",
    "held": "no_entry",
    "resumed": "white_check_mark",
    "ask_refused": "raising_hand",
    "spike": "chart_with_upwards_trend",
    "loop": "repeat",
    "tag": "no_entry_sign",
}


@dataclass(frozen=True)
class Links:
    """An offer, and the signed links that answer it."""

    offer: Offer
    raise_url: str
    deny_url: str

    def actions(self) -> list[dict[str, str]]:
        """The buttons, as the webhook's JSON carries them."""
        return [
            {"label": self.offer.label, "url": self.raise_url, "method": "POST"},
            {"label": "Deny", "url": self.deny_url, "method": "POST"},
        ]

    def ntfy(self) -> str:
        """ntfy's `Actions` header: `http` actions, which the phone's app sends
        itself (a POST) and which clear the notification once answered."""
        return "; ".join(
            f'http, "{a["label"]}", url="{a["url"]}", method=POST, clear=true'
            for a in self.actions()
        )


@dataclass(frozen=True)
class TagReached:
    """A tag's ceiling reached: its spend today, its ceiling, and when its
    calls go again (None: a ceiling of zero, a pause)."""

    name: str
    spent: Decimal
    ceiling: Decimal
    resumes_at: datetime | None


@dataclass(frozen=True)
class Alert:
    kind: AlertKind
    agent: str
    text: str
    at: datetime
    state: AgentState | None = None
    asked: Decimal | None = None
    """An `ask_refused` alert's ceiling asked for (None: none at all)."""
    spike: Spike | None = None
    loop: Loop | None = None
    """A `loop` alert's figures: what repeated, how many times, what it cost."""
    links: Links | None = None
    folded: Folded | None = None
    """Many agents at once, by one cause: their names and the cause's figures."""
    tag: TagReached | None = None
    """A `tag` alert's figures: the tag's, not the agent's."""

    @property
    def title(self) -> str:
        """ntfy's title: `plane: demo is held`, `plane: the fleet is held`,
        `plane: 2,000 agents resumed`, `plane: the tag ticket-7 reached its ceiling`."""
        folded = self.folded
        if self.tag is not None:
            who = f"the tag {self.tag.name}"
        elif folded is None:
            who = self.agent
        elif folded.kind == "held":
            who = folded.cause.who
        else:
            who = agents(len(folded.agents))
        return f"plane: {who} {TITLES[self.kind]}"

    def payload(self) -> dict[str, Any]:
        """The webhook's JSON: the agent's figures as its row has them, and
        whether its spend is all priced (`price_known`, `floor_priced`, as
        `AgentState` names them): `spend_today_usd` counts $0 for a call
        with no known price, so a receiver can tell `"0"` from nothing spent.
        Every alert carries the agent's row as last shown (`_row`); None of
        them only for an agent no row was shown of yet.

        Every alert also says how many agents it is of (`count`), the first
        of them (`agents`, at most `NAMED`; `agent` is the first) and its
        `cause` (`agent`, or `fleet`, `group` with its `group`, `day`). One
        of many agents carries its cause's figures: the fleet's or the
        group's spend today and ceiling (the day's: none). A tag's (`cause`
        `tag`, its name `tag`) carries the tag's spend today and ceiling, and
        the agent whose call was refused."""
        if self.folded is not None:
            return self._folded()
        if self.tag is not None:
            return self._tagged(self.tag)
        state = self.state
        return {
            **self._extra(),
            "count": 1,
            "agents": [self.agent],
            "cause": "agent",
            "group": None,
            "event": self.kind,
            "agent": self.agent,
            "text": self.text,
            "at": self.at.isoformat(),
            "spend_today_usd": None if state is None else plain(state.spend_today_usd),
            "limit_usd": None
            if state is None or state.limit_usd is None
            else plain(state.limit_usd),
            "resumes_at": None
            if state is None or state.resumes_at is None
            else state.resumes_at.isoformat(),
            "price_known": None if state is None else state.price_known,
            "floor_priced": None if state is None else state.floor_priced,
        }

    def _folded(self) -> dict[str, Any]:
        folded = self.folded
        assert folded is not None
        standing, cause = folded.standing, folded.cause
        return {
            "event": self.kind,
            "agent": self.agent,
            "text": self.text,
            "at": self.at.isoformat(),
            "spend_today_usd": None if standing is None else plain(standing.spent),
            "limit_usd": None
            if standing is None or standing.ceiling is None
            else plain(standing.ceiling),
            "resumes_at": None if folded.resumes_at is None else folded.resumes_at.isoformat(),
            "price_known": None,
            "floor_priced": None,
            "count": len(folded.agents),
            "agents": list(folded.agents[:NAMED]),
            "cause": cause.scope,
            "group": cause.name or None,
        }

    def _tagged(self, tag: TagReached) -> dict[str, Any]:
        return {
            "event": self.kind,
            "agent": self.agent,
            "text": self.text,
            "at": self.at.isoformat(),
            "spend_today_usd": plain(tag.spent),
            "limit_usd": plain(tag.ceiling),
            "resumes_at": None if tag.resumes_at is None else tag.resumes_at.isoformat(),
            "price_known": None,
            "floor_priced": None,
            "count": 1,
            "agents": [self.agent],
            "cause": "tag",
            "group": None,
            "tag": tag.name,
        }

    def _extra(self) -> dict[str, Any]:
        """A spike's figures; an offer's raise and its links."""
        extra: dict[str, Any] = {}
        if self.spike is not None:
            extra["last_hour_usd_per_hour"] = plain(self.spike.hour_usd)
            extra["past_day_usd_per_hour"] = plain(self.spike.day_usd)
        if self.loop is not None:
            extra["loop"] = {
                "kind": self.loop.kind,
                "times": self.loop.times,
                "cost_usd": plain(self.loop.cost),
                "since": self.loop.since.isoformat(),
                "what": list(self.loop.what),
            }
        if self.links is not None:
            made = self.links.offer
            extra["raise"] = {
                "from_usd": plain(made.from_usd),
                "to_usd": plain(made.to_usd),
                "until": "00:00 UTC",
                "expires_at": made.expires_at.isoformat(),
            }
            extra["actions"] = self.links.actions()
        return extra


def sentence(kind: AlertKind, state: AgentState, now: datetime) -> str:
    """What the alert says: amber in the conversation's words; held and
    resumed in one shape whatever the hold (`NAME is held: SPEND spent today,
    of CEILING a day.` and what frees it), as the folded alerts say theirs;
    its spend as the agent's row says it (`$?` on a model with no known
    price, never `$0.00`)."""
    name, spent, ceiling = state.name, state.spend_today_usd, state.limit_usd
    priced = Priced(price_known=state.price_known, floor_priced=state.floor_priced)
    if kind == "amber" and ceiling is not None:
        return warning(name, ceiling, spent, priced)
    if kind == "held" and state.hold_reason == "unreadable":
        return (
            f"{name} is held: a row of its spend today is not an amount, so no call of its"
            " could be counted. It starts no new turn until that row reads again."
        )
    if kind == "held":
        if state.resumes_at is not None:
            until_when = (
                f"00:00 UTC, in {until(now, state.resumes_at)}, or until the limit is raised"
            )
        elif not state.price_known:
            until_when = f"{state.model} has a price under `pricing:` in agents.yaml"
        else:
            until_when = "the operator raises its limit"
        return (
            f"{name} is held: {standing(spent, ceiling, priced)}"
            f" It starts no new turn until {until_when}."
        )
    return f"{name} has resumed: {standing(spent, ceiling, priced)}"
