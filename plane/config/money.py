"""The blocks of agents.yaml about money beyond an agent's own ceiling: the
fleet's, a group's and a tag's ceilings, the pace that is a spike
(`burn:`), and where alerts go (`notify:`)."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from plane.config.values import Block, Limit, Usd, http_url

AlertKind = Literal["amber", "held", "resumed", "ask_refused", "spike", "loop", "tag"]
ALERT_KINDS: tuple[AlertKind, ...] = (
    "amber",
    "held",
    "resumed",
    "ask_refused",
    "spike",
    "loop",
    "tag",
)


class NotifyConfig(Block):
    """Where the plane pushes a word when an agent needs the operator. Sent
    in the background: a slow or dead receiver never delays a turn, and an
    alert it never took is written to the plane's log, not lost silently."""

    webhook: str | None = None
    """A URL that takes a JSON POST: {"event", "agent", "text", "at",
    "spend_today_usd", "limit_usd", "resumes_at"}."""
    ntfy: str | None = None
    """An ntfy-style topic URL (https://ntfy.sh/your-topic): the sentence as
    the body of a POST, with a Title and Tags."""
    on: list[AlertKind] = Field(default_factory=lambda: list(ALERT_KINDS), min_length=1)
    """Which moments: `amber` (spend crossed warnRatio), `held` (no new
    turn), `resumed`, `ask_refused` (an agent asked for more; the operator is
    needed), `spike` (the last hour's spend far above the past day's: `burn:`),
    `loop` (held by the loop and stall guard: `guard:`), `tag` (a tag's
    ceiling reached: its calls refused, once a tag a day)."""
    retries: int = Field(default=3, ge=0, le=10)
    """Tries after the first, with exponential backoff, before the alert is
    logged as not delivered."""
    timeout_s: float = Field(default=5, gt=0, le=60)
    """Seconds one POST may take."""
    approve: bool = True
    """`held` and `ask_refused` alerts offer a raise until 00:00 UTC: ntfy
    buttons and signed links in the webhook's JSON (README, "Guard rails").
    They need the plane's `--http` listener, which the links point at."""
    approve_url: str | None = None
    """Where the phone reaches that listener (a proxy or a tunnel, e.g.
    https://plane.example.com); the links start with it. Left out: the
    listener's own address, http://HOST:PORT as `--http` gave it."""
    raise_usd: Annotated[Limit, Field(gt=0)] | None = None
    """What a held agent's alert offers to add for the day; left out: 40% of
    its ceiling, rounded to whole dollars once that is $1 or more (a $5.00
    ceiling: +$2; $1.00: +$0.40)."""

    @field_validator("webhook", "ntfy", "approve_url")
    @classmethod
    def _valid_url(cls, url: str | None) -> str | None:
        return None if url is None else http_url(url)

    @model_validator(mode="after")
    def _somewhere(self) -> NotifyConfig:
        if self.webhook is None and self.ntfy is None:
            raise ValueError("needs a webhook or an ntfy URL (or both)")
        return self


class BurnConfig(Block):
    """When an agent's pace is a spike: said once a day in its conversation
    and alerted (`notify.on: [spike]`), while it is under amber."""

    spike_ratio: float = Field(default=4, ge=1, le=1000)
    """The last hour's spend per hour, at least this many times the agent's
    trailing day's."""
    spike_floor_usd_per_hour: Usd = Decimal(1)
    """And at least this many dollars an hour: cents are never a spike."""


class FleetConfig(Block):
    limit_usd: Limit | None = Field(default=None, alias="limitUsd")
    """All agents' spend together, per UTC day, across every plane on the
    store. Omit it for no fleet ceiling."""


class GroupConfig(Block):
    """Agents whose spend is also counted together, as a project or a team:
    the group's ceiling sits between each agent's and the fleet's."""

    limit_usd: Limit | None = Field(default=None, alias="limitUsd")
    """The group's agents together, per UTC day, across every plane on the
    store. Omit it for no group ceiling (its spend is still counted, and
    `plane ledger --summary --by group` sums it). `/limit group NAME …`
    sets it from the keyboard, and that value replaces this one."""
    agents: list[str] = Field(default_factory=list, max_length=10_000)
    """The agents of `agents:` in the group. An agent is in one group at
    most: its ceilings stay a chain (agent ≤ group ≤ fleet), each call is
    admitted against one group, and the groups' sums add up to the fleet's.
    A gateway agent may be in a group."""


class TagConfig(Block):
    """A tag gateway calls may carry (README, "Budgets by purpose")."""

    limit_usd: Limit | None = Field(default=None, alias="limitUsd")
    """What calls carrying this tag may spend together, per UTC day, whichever
    gateway agent makes them; past it a call with the tag is refused, with the
    tag named, in its client's error shape."""
