"""What a tool is, and what it may ask of the plane.

A tool is a name, a description the model reads, a pydantic model of its
arguments (the one source of both the JSON schema the model sees and the
validation its call goes through) and a coroutine that does the work.

Tools never reach into the plane's state. What only the plane can do — book a
turn, change a ceiling, read the ledger, run the scout, fetch what compression
left out — they ask through a `ToolContext`, which the runtime implements for
one agent's turn. Tests hand in a small fake.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from plane.clock import Clock


@dataclass(frozen=True)
class ToolSpec:
    """A tool as a model is offered it. Defined with the tools, not the
    providers: the registry makes these, and a provider only sends them."""

    name: str
    description: str
    parameters: dict[str, Any]
    """A JSON schema object for the arguments."""


class ToolContext(Protocol):
    """One agent's turn, as its tools see it."""

    agent: str
    workspace: Path
    """The agent's workspace directory (it exists). File tools are confined to it."""
    sandboxed: bool
    """Whether `run_command` runs under the Landlock sandbox (see `sandbox`)."""

    @property
    def clock(self) -> Clock:
        """Read only: a turn may keep a clock that does more (a test's moves)."""
        ...

    async def schedule_turn(self, at: datetime, note: str) -> str:
        """Book this agent's own turn at `at` (UTC, already checked to be in the
        next 30 days) with `note`; returns a confirmation sentence."""
        ...

    async def ask_limit(self, value: str) -> str:
        """The raw value the agent asked for ("2", "$0.50", "off"). The plane
        applies tighten-only and returns the reply text."""
        ...

    async def budget_status(self) -> str: ...

    async def ask_scout(self, question: str, paths: list[str]) -> str:
        """`paths` are relative to this agent's workspace (POSIX separators),
        already checked to exist inside it."""
        ...

    async def retrieve(
        self,
        ref: str,
        *,
        lines: str | None,
        chars: str | None,
        pointer: str | None,
        grep: str | None,
    ) -> str: ...


class Args(BaseModel):
    """Base of every tool's arguments: an argument the tool does not know is an
    error the model hears about, not something silently dropped."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    """What the model reads: short and precise. It is part of the cached
    prompt prefix, so it never varies at run time."""
    args: type[BaseModel]
    """A pydantic model with extra="forbid" and a Field description on each argument."""
    run: Callable[[Any, ToolContext], Awaitable[str]]
    keywords: tuple[str, ...] = ()
    """Non-empty makes a heavy tool: loaded only into sessions whose founding
    message matches one of these (the capability diet)."""
    timeout_s: float = 60.0
    """The registry's backstop: a call still running after this is stopped and
    reported to the model. Tools with their own timeout set this above it."""
    changes_nothing: bool = False
    """It only reads: the same call made again in a turn, with only calls like
    it between, would bring the same result (a turn does not run it twice).
    Left False, a call of it may change what any other call finds."""


@dataclass(frozen=True)
class ToolResult:
    text: str
    ok: bool
    """False when the call was refused or failed; `text` says why in a sentence
    the model can act on."""
