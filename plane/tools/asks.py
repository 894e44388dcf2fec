"""Tools that ask the plane: `set_own_limit`, `budget_status`, `ask_scout`,
`retrieve`.

What they do is the plane's business (the ledger, the gate, the scout agent,
the compression store); here the arguments are checked and passed on through
the `ToolContext`. In particular the tighten-only rule for ceilings lives in
the plane, not in this tool: no argument here can loosen anything, it can
only ask.
"""

from __future__ import annotations

import asyncio
import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator

from plane.errors import ToolError
from plane.tools.base import Args, Tool, ToolContext
from plane.tools.workspace import relative, resolve_inside, shown


def _number_as_text(value: Any) -> Any:
    """Models often send `2` where the schema says "2"; take it as written."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value)
    return value


class SetOwnLimitArgs(Args):
    usd: Annotated[str, BeforeValidator(_number_as_text)] = Field(
        min_length=1,
        max_length=32,
        description='The daily ceiling in US dollars you ask to be held to, e.g. "2" or "$0.50".',
    )


async def set_own_limit(args: SetOwnLimitArgs, ctx: ToolContext) -> str:
    return await ctx.ask_limit(args.usd.strip())


class NoArgs(Args):
    pass


async def budget_status(args: NoArgs, ctx: ToolContext) -> str:
    return await ctx.budget_status()


class AskScoutArgs(Args):
    question: str = Field(
        min_length=1,
        max_length=4000,
        description="What you want to know, answerable from the paths.",
    )
    paths: list[str] = Field(
        default_factory=list,
        max_length=50,
        description="Files or directories in your workspace for the scout to read and search.",
    )


async def ask_scout(args: AskScoutArgs, ctx: ToolContext) -> str:
    paths = await asyncio.to_thread(_existing_inside, ctx, args.paths)
    return await ctx.ask_scout(args.question, paths)


def _existing_inside(ctx: ToolContext, paths: list[str]) -> list[str]:
    checked: list[str] = []
    for path in paths:
        real = resolve_inside(ctx.workspace, path)
        if not real.exists():
            raise ToolError(f"{shown(path)} in `paths` does not exist.")
        checked.append(relative(ctx.workspace, real))
    return checked


_RANGE = re.compile(r"^\s*[0-9]*\s*:\s*[0-9]*\s*$")


class RetrieveArgs(Args):
    ref: str = Field(
        min_length=1,
        max_length=200,
        description="The ref from a compression marker, e.g. `k_Qm9v…` in `[×37 ref:k_Qm9v…]`.",
    )
    lines: str | None = Field(
        default=None, max_length=40, description='Only lines A to B, written "A:B".'
    )
    chars: str | None = Field(
        default=None, max_length=40, description='Only characters A to B, written "A:B".'
    )
    pointer: str | None = Field(
        default=None, max_length=1000, description="Only this part of JSON, an RFC 6901 pointer."
    )
    grep: str | None = Field(
        default=None, max_length=1000, description="Only lines matching this regular expression."
    )

    @field_validator("lines", "chars")
    @classmethod
    def _range(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not _RANGE.match(value) or value.strip() == ":":
            raise ValueError('should be a range "A:B" such as "10:40", "10:" or ":40"')
        start, _, end = (part.strip() for part in value.partition(":"))
        if start and end and int(start) > int(end):
            raise ValueError(f"starts after it ends ({start} > {end})")
        return f"{start}:{end}"

    @field_validator("pointer")
    @classmethod
    def _pointer(cls, value: str | None) -> str | None:
        if value is not None and value and not value.startswith("/"):
            raise ValueError('should be a JSON pointer: empty or starting with "/"')
        return value

    @field_validator("grep")
    @classmethod
    def _grep(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"is not a valid regular expression ({error})") from None
        return value


async def retrieve(args: RetrieveArgs, ctx: ToolContext) -> str:
    return await ctx.retrieve(
        args.ref.strip(), lines=args.lines, chars=args.chars, pointer=args.pointer, grep=args.grep
    )


LIMIT = Tool(
    name="set_own_limit",
    description=(
        "Ask to be held to a lower daily spending ceiling (US dollars per UTC day). You may "
        'only lower your own ceiling: a value above your current one, or "off", is '
        "refused and shown to the operator to decide."
    ),
    args=SetOwnLimitArgs,
    run=set_own_limit,
    timeout_s=30,
)
BUDGET = Tool(
    name="budget_status",
    description=(
        "Your spend today, your daily ceiling, the time until it resets (00:00 UTC) and "
        "how much of your context is used, so you can pace yourself."
    ),
    args=NoArgs,
    run=budget_status,
    timeout_s=30,
    changes_nothing=True,
)
SCOUT = Tool(
    name="ask_scout",
    description=(
        "Have the scout agent read and search the given paths and answer a question "
        "concisely, so the raw material never fills your context. The scout's work is "
        "billed to the scout."
    ),
    args=AskScoutArgs,
    run=ask_scout,
    timeout_s=900,
)
RETRIEVE = Tool(
    name="retrieve",
    description=(
        "Get back what a compressed tool output left out, by the ref in its marker: "
        "whole, or only some lines, characters, a JSON pointer, or lines matching a regex."
    ),
    args=RetrieveArgs,
    run=retrieve,
    changes_nothing=True,
)
