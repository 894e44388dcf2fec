"""`schedule_turn`: an agent books its own next turn.

This is why ceilings exist: an agent that books its own turns runs while
nobody watches. The tool only checks the time against the plane's clock (not
in the past, at most `HORIZON` ahead); the booking, its persistence and the
gate it later goes through belong to the plane, behind `ctx.schedule_turn`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pydantic import Field, model_validator

from plane.errors import ToolError
from plane.tools.base import Args, Tool, ToolContext

HORIZON = timedelta(days=30)


class ScheduleTurnArgs(Args):
    in_seconds: int | None = Field(
        default=None,
        ge=1,
        le=int(HORIZON.total_seconds()),
        description="Take the turn this many seconds from now. Give this or `at`.",
    )
    at: str | None = Field(
        default=None,
        max_length=64,
        description="Take the turn at this UTC time, ISO-8601, e.g. 2025-06-01T14:30:00Z. "
        "Give this or `in_seconds`.",
    )
    note: str = Field(
        min_length=1,
        max_length=2000,
        description="What the turn is for; you will read it when the turn starts.",
    )

    @model_validator(mode="after")
    def _one_time(self) -> ScheduleTurnArgs:
        if (self.in_seconds is None) == (self.at is None):
            raise ValueError("give exactly one of `in_seconds` or `at`")
        return self


async def schedule_turn(args: ScheduleTurnArgs, ctx: ToolContext) -> str:
    now = ctx.clock.now()
    if args.in_seconds is not None:
        when = now + timedelta(seconds=args.in_seconds)
    else:
        when = parse_utc(args.at or "")
        if when <= now:
            raise ToolError(f"`at` {_iso(when)} is in the past; it is now {_iso(now)}.")
        if when - now > HORIZON:
            raise ToolError(
                f"`at` {_iso(when)} is more than {HORIZON.days} days away; "
                f"the latest is {_iso(now + HORIZON)}."
            )
    return await ctx.schedule_turn(when, args.note)


def parse_utc(text: str) -> datetime:
    """An ISO-8601 time; one without an offset is taken as UTC, as the
    argument's description promises."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ToolError(
            f"`at` {text!r} is not an ISO-8601 time such as 2025-06-01T14:30:00Z."
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


TOOL = Tool(
    name="schedule_turn",
    description=(
        "Book your own next turn, in `in_seconds` or `at` a UTC time (up to 30 days "
        "ahead), with a note to yourself. The turn goes through your spending ceiling "
        "like any other."
    ),
    args=ScheduleTurnArgs,
    run=schedule_turn,
    timeout_s=30,
)
