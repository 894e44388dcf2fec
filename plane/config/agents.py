"""An agent's block of agents.yaml and `defaults:`, with the blocks inside
them: ambient turns, the gateway, MCP servers, the loop and stall guard,
and the cheaper model an agent steps down to near its ceiling."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from plane.config.names import EMBEDDED, EMBEDDED_MODEL, ENV_NAME
from plane.config.values import Block, Limit, ToolName


class AmbientConfig(Block):
    every_minutes: int = Field(ge=1, le=7 * 24 * 60)
    """Wake the agent this often for a turn of its own. It goes through the
    gate like any turn: while the agent is held it waits (one turn, not a
    backlog), and runs when the hold ends."""
    note: str = "An ambient turn: check whether anything needs doing, and do it."
    """What the agent is told at each ambient turn."""


class GatewayConfig(Block):
    """An agent the plane does not run: a client (Claude Code, Codex, Aider)
    sends its LLM calls to the plane's HTTP listener with the agent's key, and
    the plane forwards each to the agent's `provider`, metered and capped."""

    compress: bool = True
    """Pass tool results inside the client's requests through the plane's
    deterministic compressor (never text people or models wrote), those the
    client marked for its prompt cache too: the same result gives the same
    bytes in every request, so the cache stays warm. `false` sends every
    request as the client wrote it."""


class McpServerConfig(Block):
    """An MCP server whose tools the agent gets, run by the plane over stdio:
    started when a session begins, confined as `run_command` is (the agent's
    workspace, Landlock, a process tree of its own that ends with the
    session), its tool list read once and kept for the whole session."""

    command: str = Field(min_length=1, max_length=4096)
    """The program to run: a name found on PATH (`mcp-server-time`, `npx`,
    `uvx`) or an absolute path. It runs in the agent's workspace."""
    args: list[Annotated[str, Field(max_length=4096)]] = Field(default_factory=list, max_length=256)
    """Its arguments."""
    env: dict[str, Annotated[str, Field(max_length=32_768)]] = Field(
        default_factory=dict, max_length=64
    )
    """Environment variables it gets, beyond the few harmless ones every
    tool gets (PATH, LANG, TZ…; HOME is the workspace). Nothing else of the
    plane's environment crosses: an API key the server needs goes here."""
    read: list[Path] = Field(default_factory=list, max_length=32)
    """Absolute directories outside the workspace that it may read (its
    own code, when it is installed outside the system and the plane's
    Python): read-only, and never the plane's home."""
    start_timeout_s: float = Field(default=30, gt=0, le=600)
    """Seconds it has to start and list its tools; past them its tools are
    left out of the session, which says so."""
    timeout_s: float = Field(default=60, gt=0, le=3600)
    """Seconds one tool call may take; past them the call fails, and the
    server is stopped (it is started again at its next call)."""

    @field_validator("command")
    @classmethod
    def _a_command(cls, command: str) -> str:
        if command != command.strip() or "\0" in command:
            raise ValueError("must be a program name or path, without surrounding spaces")
        return command

    @field_validator("env")
    @classmethod
    def _env_names(cls, env: dict[str, str]) -> dict[str, str]:
        for name in env:
            if not ENV_NAME.match(name):
                raise ValueError(f"{name[:40]!r} is not the name of an environment variable")
        return env

    @field_validator("read")
    @classmethod
    def _absolute(cls, paths: list[Path]) -> list[Path]:
        for path in paths:
            if not path.is_absolute():
                raise ValueError(f"{str(path)[:80]!r} is not an absolute directory")
        return paths


class McpConfig(Block):
    servers: dict[str, McpServerConfig] = Field(default_factory=dict, max_length=32)
    """MCP servers by name. Their tools are named `server.tool` in `tools:`
    (`server.*` allows all of a server's). An agent's servers add to those of
    `defaults`, and replace one of the same name."""


def _off(value: Any) -> Any:
    """`off` (or `false`) for a block that can be turned off: `guard: off`."""
    return "off" if value is False or (isinstance(value, str) and value.lower() == "off") else value


class GuardConfig(Block):
    """The loop and stall guard (README, "Guard rails"): an agent that repeats
    itself is held as a ceiling holds it (what it is sent is kept, marked
    held; its conversation says what repeated, how many times and what it
    cost) until the operator resumes it (p in the TUI, `plane resume
    AGENT`). Exact and cheap: it compares hashes of what the agent did and
    calls no model. `guard: off` turns it off (for every agent in
    `defaults`, for one in its block); an agent's block changes only the
    keys it gives."""

    enabled: bool = True
    """Watch this agent's calls (`guard: off` is `enabled: false`)."""
    repeats: int = Field(default=5, ge=2, le=1000)
    """Held at the same tool call with the same result this many times in a
    row (within a turn and across turns), or a gateway client's same request
    this many times in a row; a round of two or three calls with the same
    results after about as many calls and two more (at 5: two calls 4 times
    over, three calls 3 times over)."""
    answers: int = Field(default=5, ge=2, le=1000)
    """Held at the same answer this many times in a row with nothing new
    between them (no new tool result, message or file change): a poll whose
    results change is not a loop, whatever it answers."""
    stall: int = Field(default=10, ge=2, le=10_000)
    """Held after this many LLM calls in a row that brought nothing new: every
    tool result one seen before, no answer not given before, no file changed
    in the workspace, no new message (a gateway client's new text). Past
    the longest round of calls held (9 calls at `repeats: 5`), so a round is
    said as one."""
    within_minutes: float = Field(default=60, gt=0, le=24 * 60)
    """Calls further apart than this start the count afresh: a check each
    hour that finds nothing new is a poll, not a loop."""


class FallbackConfig(Block):
    """Step down, not only stop: from `at` of its daily ceiling an agent's
    turns use `model`, a cheaper one, until the day resets (then it is back
    on its own model). The switch is said once in its conversation and shown
    in its row and the title; the ceiling still holds at 100%."""

    at: float = Field(gt=0, lt=1)
    """The share of its ceiling from which it steps down (0.8: at $4.00 of $5.00)."""
    model: str = Field(min_length=1)
    """The model it steps down to: one a provider lists in its `models:`,
    served as `model:` would be (its provider's key set). A gateway agent's
    calls stay on its own provider, the request's model replaced."""


class AgentConfig(Block):
    limit_usd: Limit | None = Field(default=None, alias="limitUsd")
    """This agent's daily ceiling in USD. It can only narrow defaults.limitUsd."""
    model: str | None = None
    """The model (default: defaults.model)."""
    provider: str | None = None
    """A provider name from `providers` (default: defaults.provider)."""
    role: str = ""
    """The role / system prompt."""
    tools: list[ToolName] | None = None
    """The tools this agent may use (default: all, its MCP servers' too), by
    their names in the tool registry; a name that is not one is refused, with
    the list. An MCP server's tools are `server.tool`, or `server.*` for all."""
    mcp: McpConfig | None = None
    """MCP servers whose tools this agent gets (beside those of `defaults`)."""
    workspace: Path | None = None
    """The agent's working directory (default: a directory under the plane's home)."""
    ambient: AmbientConfig | None = None
    """Ambient turns: the agent wakes on its own every so often."""
    gateway: GatewayConfig | None = None
    """Make this a gateway agent: it takes no turns of its own; a client
    outside the plane spends through it (see `plane key` and `plane gateway env`)."""
    guard: GuardConfig | None = None
    """The loop and stall guard for this agent, over `defaults.guard`: only
    the keys given change (`guard: {repeats: 8}`); `guard: off` turns it off."""
    fallback: FallbackConfig | Literal["off"] | None = None
    """The cheaper model it steps down to near its ceiling (default:
    `defaults.fallback`, except for a gateway agent, whose client named its
    model: its fallback is off unless its own block sets one); `off`: none."""

    @field_validator("guard", mode="before")
    @classmethod
    def _guard_off(cls, value: Any) -> Any:
        return {"enabled": False} if _off(value) == "off" else value

    @field_validator("fallback", mode="before")
    @classmethod
    def _fallback_off(cls, value: Any) -> Any:
        return _off(value)


class Defaults(Block):
    limit_usd: Limit | None = Field(default=None, alias="limitUsd")
    """Every agent's daily ceiling in USD per UTC day, including agents created
    later from the keyboard. Omit it for no ceiling (spend is still measured);
    0 is a real ceiling: no paid turns."""
    warn_ratio: float = Field(default=0.8, gt=0, le=1, alias="warnRatio")
    """From this fraction of the ceiling the spend shows amber, and the
    conversation says so once a day."""
    model: str = EMBEDDED_MODEL
    provider: str = EMBEDDED
    max_calls_per_turn: int = Field(default=8, ge=1, le=100)
    """A turn ends after this many LLM calls, so a ceiling is overshot by at
    most one bounded turn."""
    max_output_tokens: int = Field(default=512, ge=1, le=200_000)
    mcp: McpConfig = McpConfig()
    """MCP servers every agent gets (an agent's own `mcp` adds to them)."""
    guard: GuardConfig = GuardConfig()
    """The loop and stall guard, for every agent (on; `guard: off` turns it off)."""
    fallback: FallbackConfig | None = None
    """The cheaper model every agent the plane runs steps down to near its
    ceiling (off unless set; a gateway agent's only from its own block)."""

    @field_validator("guard", mode="before")
    @classmethod
    def _guard_off(cls, value: Any) -> Any:
        return {"enabled": False} if _off(value) == "off" else value

    @field_validator("fallback", mode="before")
    @classmethod
    def _fallback_off(cls, value: Any) -> Any:
        return None if _off(value) == "off" else value
