"""agents.yaml, as pydantic models. The docstring under each field is the
user's documentation of that key.

`load_config()` is the one reader of the file. A bad file raises one
`ConfigError` naming the key, the line and what is wrong, and the plane does
not start half-configured. The reading is bounded before YAML sees a byte of
it (plane/yaml_reader.py), so no file can hang the start or exhaust memory.
An empty file is refused too: it would silently drop every ceiling.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from plane import collector
from plane.errors import ConfigError
from plane.yaml_reader import Plain, as_text, document, locate, read_file

EMBEDDED = "embedded"
"""The provider name of the model the plane runs itself (llama.cpp, SmolLM2)."""
EMBEDDED_MODEL = "smollm2-135m"

AGENT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
AGENT_NAME_RULE = (
    "1–32 characters: lower-case letters, digits, '-' and '_', starting with a letter or digit"
)


def agent_name_refused(name: str) -> str | None:
    """Why `name` cannot name an agent (None: it can): what a name may be,
    which an empty one asked for (`'' is not a valid name` read as a riddle)."""
    if AGENT_NAME.match(name):
        return None
    if not name.strip():
        return f"Give the agent a name: {AGENT_NAME_RULE}."
    return f"{name!r} is not a valid name: {AGENT_NAME_RULE}."


Usd = Annotated[Decimal, Field(ge=0, le=1_000_000, allow_inf_nan=False, decimal_places=6)]


def _in_cents(amount: Decimal) -> Decimal:
    """A ceiling is dollars and cents, as /limit takes it: $0.001 would read
    `$0.00`, a pause by its figure, while it lets calls through."""
    if amount != amount.quantize(Decimal("0.01")):
        raise ValueError(f"{amount} has more than two decimals; a limit is in dollars and cents")
    return amount


Limit = Annotated[Usd, AfterValidator(_in_cents)]

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


MCP_SERVER_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]|_(?!_)){0,23}$")
MCP_SERVER_RULE = (
    "1–24 characters: lower-case letters, digits, '-' and single '_', starting with a letter "
    "or digit"
)
MCP_TOOL = re.compile(r"^(?P<server>[^.]+)\.(?P<tool>\*|[A-Za-z0-9_.\-]{1,128})$")
"""An MCP tool in an allowlist: `server.tool`, or `server.*` for all of a server's."""


def _known_tool(name: str) -> str:
    # The registry is the one list of tools. Imported here, not at the top,
    # so that the tools (and what they import) never depend on the config.
    from plane.tools.registry import TOOLS

    if name in TOOLS:
        return name
    if (mcp := MCP_TOOL.match(name)) and MCP_SERVER_NAME.match(mcp["server"]):
        return name  # the server is checked against the agent's servers (`incoherence`)
    close = difflib.get_close_matches(name, list(TOOLS), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise ValueError(
        f"{name!r} is not a tool ({hint}the tools are {', '.join(TOOLS)}, "
        "and an MCP server's as server.tool or server.*)"
    )


ToolName = Annotated[str, AfterValidator(_known_tool)]


def _http_url(url: str) -> str:
    """An http(s) URL with a host, or a sentence saying what is wrong with it."""
    example = "like https://api.openai.com/v1"
    if url != url.strip() or any(c.isspace() or not c.isprintable() for c in url):
        raise ValueError(f"must be a URL without spaces or control characters, {example}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        reason = str(exc)[:1].lower() + str(exc)[1:]
        raise ValueError(f"is not a valid URL ({reason}), {example}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"must start with http:// or https://, {example}")
    if not parts.hostname:
        raise ValueError(f"has no host, {example}")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry a user or password; put the key in api_key_env's variable")
    if port == 0:
        raise ValueError(f"has port 0, {example}")
    return url


class Block(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class ProviderConfig(Block):
    kind: Literal["openai-compatible", "anthropic", "embedded"]
    """The wire protocol: `openai-compatible` (OpenAI, OpenRouter, Ollama,
    vLLM, LM Studio, llama.cpp), `anthropic` (the Messages API), or
    `embedded` (the small model the plane runs itself; no key, no network)."""
    base_url: str | None = None
    """Where the API lives, e.g. https://api.openai.com/v1. Anthropic's
    default is https://api.anthropic.com; the embedded model needs none."""
    api_key_env: str | None = None
    """The environment variable holding the API key. The key itself never
    goes in this file, in a log, or to the TUI. While it is not set, a
    provider no agent uses is left out (its models are not offered); one an
    agent uses stops the plane, saying which variable to set."""
    timeout_s: float = Field(default=120, gt=0, le=3600)
    """Seconds to wait for a response before the call counts as failed."""
    max_retries: int = Field(default=4, ge=0, le=10)
    """Retries on 429 and 5xx (exponential backoff with jitter, honouring
    Retry-After)."""
    tool_mode: Literal["native", "json_schema"] | None = None
    """How models here call tools: `native`, or `json_schema` for models that
    cannot (a schema forced through response_format). Default: native, and
    json_schema for the embedded model."""
    models: list[str] = Field(default_factory=list)
    """Models offered when an agent is created from the keyboard."""
    context_window: int = Field(default=128_000, gt=0)
    """Tokens the models here accept in one call (auto-compact works from it)."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    """Sampling temperature (default: the provider's own)."""
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    """Discourages repeating tokens (OpenAI-compatible providers only)."""

    @field_validator("base_url")
    @classmethod
    def _valid_url(cls, url: str | None) -> str | None:
        return None if url is None else _http_url(url)

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, name: str | None) -> str | None:
        # Never echo the value: it may be the key itself, pasted by mistake.
        if name is not None and not ENV_NAME.match(name):
            raise ValueError(
                "must be the name of an environment variable, like OPENAI_API_KEY "
                "(the key itself never goes in this file)"
            )
        return name

    @property
    def effective_tool_mode(self) -> Literal["native", "json_schema"]:
        if self.tool_mode:
            return self.tool_mode
        return "json_schema" if self.kind == EMBEDDED else "native"

    @model_validator(mode="after")
    def _needs_url(self) -> ProviderConfig:
        if self.kind == "openai-compatible" and not self.base_url:
            raise ValueError("an openai-compatible provider needs a base_url")
        return self


EMBEDDED_PROVIDER = ProviderConfig(
    kind="embedded",
    models=[EMBEDDED_MODEL],
    context_window=4096,
    # A 135M model left to itself repeats itself; these keep its answers short.
    temperature=0.3,
    frequency_penalty=0.5,
)


class Price(Block):
    """USD per 1M tokens."""

    input: Usd
    """Uncached prompt tokens."""
    cached_input: Usd | None = None
    """Prompt tokens read from the provider's cache (default: the input price)."""
    cache_write: Usd | None = None
    """Prompt tokens written to the provider's cache (default: the input price)."""
    cache_write_1h: Usd | None = None
    """Prompt tokens written to Anthropic's 1-hour cache (default: the cache-write price)."""
    output: Usd
    """Generated tokens."""
    web_search: Usd | None = None
    """USD per 1,000 web searches a provider's server tool makes (Anthropic's
    `web_search`, OpenAI's): billed per search, beside the tokens of what it
    found (default: $10, both providers' price)."""
    file_search: Usd | None = None
    """USD per 1,000 searches OpenAI's `file_search` server tool makes
    (Responses): billed per call, beside the tokens of what it found
    (default: $2.50, OpenAI's price)."""
    code_interpreter: Usd | None = None
    """USD per GB of each container OpenAI's `code_interpreter` server tool
    runs code in (Responses): a container of 1 GB (the default size) costs
    this, one of 4 GB four times it (default: $0.03, OpenAI's price)."""


class SessionConfig(Block):
    compact_enabled: bool = False
    """Replace old, large tool results in the model's input by a short marker."""
    compact_keep_last_n_turns: int = Field(default=4, ge=0)
    """Never touch the most recent N turns."""
    compact_min_chars: int = Field(default=800, ge=0)
    """Only results longer than this are compacted."""
    compact_trigger_chars: int = Field(default=16_000, ge=0)
    """Compact in a batch once this much old tool output has piled up, so the
    provider's cache breaks rarely, not every turn."""
    auto_compact: bool = False
    """Summarise the whole history when the prompt nears the context window
    (the transcript is saved first)."""


class RepoMapConfig(Block):
    enabled: bool = False
    """Summarise files the agent reads into REPO_MAP.json and the prompt."""
    max_files: int = Field(default=100, gt=0)
    max_file_bytes: int = Field(default=200_000, gt=0)
    max_snapshot_chars: int = Field(default=2000, gt=0)


class CompressionConfig(Block):
    enabled: bool = True
    """Compress machine-generated tool output (never what people or models wrote)."""
    ttl_seconds: int = Field(default=3600, ge=3600)
    """How long what compression removed stays retrievable (at least an hour)."""


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


AlertKind = Literal["amber", "held", "resumed", "ask_refused", "spike", "loop"]
ALERT_KINDS: tuple[AlertKind, ...] = ("amber", "held", "resumed", "ask_refused", "spike", "loop")


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
    `loop` (held by the loop and stall guard: `guard:`)."""
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
        return None if url is None else _http_url(url)

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


GROUP_NAME = AGENT_NAME
GROUP_NAME_RULE = AGENT_NAME_RULE

TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,63}$")
TAG_RULE = "1–64 characters: letters, digits and . _ : @ / + = -, starting with a letter or digit"
"""What a gateway call's tag may be (`x-plane-tag`, or the client's metadata):
short and plain, so it reads in a line of the conversation and a label of
/metrics, and no header can smuggle anything into either."""


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


STORE_RULE = "a postgresql:// URL (omit `store` for the SQLite file in the plane's home)"


class Config(Block):
    defaults: Defaults = Defaults()
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    """Named providers. `embedded` always exists."""
    pricing: dict[str, Price] = Field(default_factory=dict)
    """Prices that override the built-in table, by model substring (the
    longest matching substring wins)."""
    agents: dict[str, AgentConfig] = Field(default_factory=dict)
    session: SessionConfig = SessionConfig()
    repo_map: RepoMapConfig = RepoMapConfig()
    compression: CompressionConfig = CompressionConfig()
    sandbox: bool = True
    """Run agents' shell commands under Linux Landlock: they may read the
    system and work in their own workspace, and reach nothing else (not the
    plane's database, not your home). Where the kernel has no Landlock,
    commands are refused; `false` runs them unconfined."""
    notify: NotifyConfig | None = None
    """Alerts to a webhook and/or an ntfy topic (off unless set)."""
    burn: BurnConfig = BurnConfig()
    store: str | None = None
    """Where the ledger, conversations and agents live: omitted, the SQLite
    file in the plane's home; `postgresql://…`, a PostgreSQL database that
    several planes share (README, "Several machines"). `PLANE_STORE`, when
    set, is used instead."""
    fleet: FleetConfig = FleetConfig()
    groups: dict[str, GroupConfig] = Field(default_factory=dict, max_length=1_000)
    """Groups of agents by what their work is for (a project, a team), each
    with its own daily ceiling between its agents' and the fleet's."""
    tags: dict[str, TagConfig] = Field(default_factory=dict, max_length=1_000)
    """Tags gateway calls may carry (`x-plane-tag`, or the client's metadata)
    that have a daily ceiling of their own. A call may carry any other tag:
    the ledger keeps it, and no ceiling binds it."""

    @field_validator("store")
    @classmethod
    def _a_store_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"{value!r} is not {STORE_RULE}")
        return value

    _source: str = PrivateAttr("agents.yaml")
    _tree: Any = PrivateAttr(None)
    _member_of: dict[str, str] | None = PrivateAttr(None)
    """The YAML as read, kept so a problem found after loading still names its line."""
    _file: Path | None = PrivateAttr(None)
    _looked: tuple[Path, ...] = PrivateAttr(())

    def read_from(self) -> Path | None:
        """The file these settings were read from (absolute); None: the built-in defaults."""
        return self._file

    def looked_in(self) -> tuple[Path, ...]:
        """Where an agents.yaml was looked for and not found, when these are
        the built-in defaults: what a plane with none of the file's agents says."""
        return self._looked

    def explain(self, loc: list[str], message: str) -> str:
        """A problem found after loading (a key missing from the environment),
        said as a load error says it: the file, the line, the key."""
        return locate(self._tree, loc, self._source, message)

    @model_validator(mode="after")
    def _with_embedded(self) -> Config:
        self.providers.setdefault(EMBEDDED, EMBEDDED_PROVIDER)
        return self

    def provider_of(self, agent: AgentConfig) -> str:
        """The agent's provider; with none named, the default, unless another
        provider lists the agent's model and the default does not."""
        if agent.provider:
            return agent.provider
        default, model = self.defaults.provider, self.model_of(agent)
        if default in self.providers and model in self.providers[default].models:
            return default
        listing = [name for name, p in self.providers.items() if model in p.models]
        return listing[0] if listing else default

    def mcp_servers_of(self, agent: str) -> dict[str, McpServerConfig]:
        """`agent`'s MCP servers: the defaults', with its own added over them
        by name. An agent made from the keyboard has the defaults'."""
        servers = dict(self.defaults.mcp.servers)
        block = self.agents.get(agent)
        if block is not None and block.mcp is not None:
            servers.update(block.mcp.servers)
        return servers

    def group_of(self, agent: str) -> str | None:
        """The group `agent` is in (None: none)."""
        if self._member_of is None:  # asked at every call's admission: a map, made once
            self._member_of = {a: name for name, g in self.groups.items() for a in g.agents}
        return self._member_of.get(agent)

    def guard_of(self, agent: str) -> GuardConfig:
        """`agent`'s guard: the defaults', with the keys its own block gives over them."""
        block = self.agents.get(agent)
        own = block.guard if block is not None else None
        if own is None:
            return self.defaults.guard
        given = {key: getattr(own, key) for key in own.model_fields_set}
        return self.defaults.guard.model_copy(update=given)

    def fallback_of(self, agent: str) -> FallbackConfig | None:
        """`agent`'s step-down: its block's, else the defaults' (never for a
        gateway agent, whose client named the model it wants)."""
        block = self.agents.get(agent)
        own = block.fallback if block is not None else None
        if isinstance(own, FallbackConfig):
            return own
        if own == "off":
            return None
        return None if block is not None and block.gateway is not None else self.defaults.fallback

    def model_of(self, agent: AgentConfig) -> str:
        return agent.model or self.defaults.model

    def ceiling_of(self, agent: AgentConfig) -> Decimal | None:
        return agent.limit_usd if agent.limit_usd is not None else self.defaults.limit_usd

    def models(self) -> list[str]:
        """Every model an agent can be put on: those configured anywhere."""
        seen = [self.defaults.model]
        seen += [m for p in self.providers.values() for m in p.models]
        seen += [a.model for a in self.agents.values() if a.model]
        return list(dict.fromkeys(seen))


def incoherence(config: Config) -> tuple[list[str], str] | None:
    """The first thing in a well-typed config that still makes no sense, with
    where it is; None when there is none."""
    if config.defaults.provider not in config.providers:
        return ["defaults", "provider"], "is not one of the providers"
    for model in config.pricing:
        if not model.strip():
            return ["pricing"], f"the model name {model!r} would match, and price, every model"
    if (wrong := _not_embedded(config, AgentConfig())) is not None:
        return ["defaults", "model"], wrong
    if config.defaults.fallback is not None and (
        wrong := _fallback_wrong(config, config.defaults.fallback, AgentConfig())
    ):
        return ["defaults", "fallback", "model"], wrong
    for server in config.defaults.mcp.servers:
        if not MCP_SERVER_NAME.match(server):
            return [
                "defaults",
                "mcp",
                "servers",
                server,
            ], f"not a valid server name ({MCP_SERVER_RULE})"
    default = config.defaults.limit_usd
    for name, agent in config.agents.items():
        if not AGENT_NAME.match(name):
            return ["agents", name], f"not a valid agent name ({AGENT_NAME_RULE})"
        if agent.model == "":  # `model_of` would read it as defaults.model, unsaid
            return ["agents", name, "model"], "is empty; leave it out for defaults.model"
        if agent.provider and agent.provider not in config.providers:
            return ["agents", name, "provider"], "is not one of the providers"
        if agent.gateway is not None and (unused := _clients_own(agent)) is not None:
            return ["agents", name, unused[0]], unused[1]
        if agent.gateway is None and (wrong := _not_embedded(config, agent)) is not None:
            return ["agents", name, "model" if agent.model else "provider"], wrong
        if (wrong_mcp := _mcp_incoherence(config, name, agent)) is not None:
            return ["agents", name, *wrong_mcp[0]], wrong_mcp[1]
        if isinstance(agent.fallback, FallbackConfig) and (
            wrong := _fallback_wrong(config, agent.fallback, agent)
        ):
            return ["agents", name, "fallback", "model"], wrong
        if agent.limit_usd is not None and default is not None and agent.limit_usd > default:
            return ["agents", name, "limitUsd"], (
                f"${agent.limit_usd:.2f} is above defaults.limitUsd ${default:.2f}; "
                "an agent's own block can only narrow the default"
            )
    return _groups_incoherence(config)


def _groups_incoherence(config: Config) -> tuple[list[str], str] | None:
    """A group or tag name that is not one, an agent no block names, an agent
    in two groups."""
    seen: dict[str, str] = {}
    for name, group in config.groups.items():
        if not GROUP_NAME.match(name):
            return ["groups", name], f"not a valid group name ({GROUP_NAME_RULE})"
        for index, agent in enumerate(group.agents):
            where = ["groups", name, "agents", str(index)]
            if agent not in config.agents:
                return where, f"{agent!r} is not one of the agents of `agents:`"
            if agent in seen:
                return where, (
                    f"{agent!r} is in group {seen[agent]!r} already; an agent is in one group "
                    "at most, so its ceilings stay a chain (agent, group, fleet)"
                )
            seen[agent] = name
    for tag in config.tags:
        if not TAG.match(tag):
            return ["tags", tag], f"not a valid tag ({TAG_RULE})"
    return None


def fallback_provider(config: Config, agent: str) -> str | None:
    """The provider `agent`'s fallback model runs on (None: it has none): as
    `model:` resolves it, but a gateway agent's stays on its own provider
    (its client speaks that provider's API)."""
    fallback = config.fallback_of(agent)
    if fallback is None:
        return None
    block = config.agents.get(agent, AgentConfig())
    if block.gateway is not None:
        return config.provider_of(block)
    return config.provider_of(AgentConfig(model=fallback.model))


def _fallback_wrong(config: Config, fallback: FallbackConfig, owner: AgentConfig) -> str | None:
    """Why `owner` cannot step down to `fallback.model`: no provider lists
    it, it is not on a gateway agent's own provider, or the embedded model
    would answer as itself. Stricter than `model:`: a name nothing serves
    would show only at 80% of a ceiling, at night."""
    model = fallback.model
    if model not in [m for p in config.providers.values() for m in p.models]:
        return (
            f"{model!r} is not a model of any provider; list it under a provider's models: "
            "(a fallback is used late in the day, so a name nothing serves is refused now)"
        )
    if owner.gateway is not None:
        provider = config.provider_of(owner)
        if model not in config.providers[provider].models:
            return (
                f"{model!r} is not a model of the agent's provider {provider!r}; a gateway "
                "agent's calls stay on its own provider, whose API its client speaks"
            )
        return None
    return _not_embedded(config, AgentConfig(model=model))


def _mcp_incoherence(config: Config, name: str, agent: AgentConfig) -> tuple[list[str], str] | None:
    """A server name that is not one, or a `server.tool` in `tools:` whose
    server the agent does not have."""
    for server in agent.mcp.servers if agent.mcp is not None else {}:
        if not MCP_SERVER_NAME.match(server):
            return ["mcp", "servers", server], f"not a valid server name ({MCP_SERVER_RULE})"
    servers = config.mcp_servers_of(name)
    for index, tool in enumerate(agent.tools or ()):
        mcp = MCP_TOOL.match(tool)
        if mcp is not None and mcp["server"] not in servers:
            have = f"its servers are {', '.join(servers)}" if servers else "it has no MCP servers"
            return ["tools", str(index)], f"{tool!r} names the MCP server {mcp['server']!r}; {have}"
    return None


def _clients_own(agent: AgentConfig) -> tuple[str, str] | None:
    """A key of a gateway agent that would do nothing, and why: its client
    sends the prompt and the tools, so a role or tools set here would be
    silently ignored (as `plane edit` refuses them)."""
    if agent.ambient is not None:
        return "ambient", "a gateway agent takes no turns of its own"
    if agent.role:
        return "role", "a gateway agent's client sends its own prompt; the role would be unused"
    if agent.tools is not None:
        return "tools", "a gateway agent's client brings its own tools; these would be unused"
    if agent.mcp is not None:
        return "mcp", "a gateway agent's client brings its own tools; these servers would be unused"
    return None


def _not_embedded(config: Config, agent: AgentConfig) -> str | None:
    """Why `agent` cannot run as configured on the embedded model: it serves
    only its own, and would answer as itself under another model's name (and
    be billed at that model's price)."""
    model, provider = config.model_of(agent), config.provider_of(agent)
    if config.providers[provider].kind != EMBEDDED or model == EMBEDDED_MODEL:
        return None
    return (
        f"{model!r} would run on the embedded model ({EMBEDDED_MODEL}), which answers as "
        "itself whatever it is called; name the provider that serves it (provider: …)"
    )


def load_config(path: Path | None, looked: Sequence[Path] = ()) -> Config:
    """Read and validate agents.yaml; `None` gives the built-in defaults
    (the embedded model, no ceiling), which remember where a file was
    `looked` for. A file with nothing in it is refused: it would run every
    agent with no ceiling, which is not what its author meant, and nothing
    would say so."""
    if path is None:
        defaults = Config()
        defaults._looked = tuple(place.absolute() for place in looked)
        return defaults
    config = _loaded(path)
    config._file = path.resolve()
    return config


def _loaded(path: Path) -> Config:
    source = str(path)
    with collector.paused():  # what it builds is kept: nothing for the collector
        text = as_text(read_file(path), source)
        data = document(text, source)
        if data is None:
            raise ConfigError(
                f"{source}: the file is empty (no settings, only blank lines or comments), "
                "so it would set no ceiling; write the settings in it, or remove it to run "
                "on the built-in defaults."
            )
        return _validated(data, source, len(text))


def parse_config(text: str, source: str = "agents.yaml") -> Config:
    """A config from YAML text; empty text is the built-in defaults."""
    data = document(text, source)
    return _validated({} if data is None else data, source, len(text))


def _validated(data: Any, source: str, characters: int) -> Config:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of keys.")
    try:
        config = Config.model_validate(Plain(data, source, characters).value(data))
    except ValidationError as exc:
        raise ConfigError(_explain(exc, data, source)) from None
    if problem := incoherence(config):
        loc, message = problem
        raise ConfigError(locate(data, loc, source, message))
    config._source, config._tree = source, data
    return config


def _explain(exc: ValidationError, data: Any, source: str) -> str:
    error = exc.errors()[0]
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "unknown key"
    return locate(data, [str(p) for p in error["loc"]], source, message)
