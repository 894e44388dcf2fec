"""agents.yaml, as pydantic models. The docstring under each field is the
user's documentation of that key.

`load_config()` is the one reader of the file. A bad file raises one
`ConfigError` naming the key, the line and what is wrong, and the plane does
not start half-configured.
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from plane.errors import ConfigError

EMBEDDED = "embedded"
"""The provider name of the model the plane runs itself (llama.cpp, SmolLM2)."""
EMBEDDED_MODEL = "smollm2-135m"

AGENT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
AGENT_NAME_RULE = (
    "1–32 characters: lower-case letters, digits, '-' and '_', starting with a letter or digit"
)

Usd = Annotated[Decimal, Field(ge=0, le=1_000_000, allow_inf_nan=False, decimal_places=6)]


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
    output: Usd
    """Generated tokens."""


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


class AgentConfig(Block):
    limit_usd: Usd | None = Field(default=None, alias="limitUsd")
    """This agent's daily ceiling in USD. It can only narrow defaults.limitUsd."""
    model: str | None = None
    """The model (default: defaults.model)."""
    provider: str | None = None
    """A provider name from `providers` (default: defaults.provider)."""
    role: str = ""
    """The role / system prompt."""
    tools: list[str] | None = None
    """The tools this agent may use (default: all)."""
    workspace: Path | None = None
    """The agent's working directory (default: a directory under the plane's home)."""
    ambient: AmbientConfig | None = None
    """Ambient turns: the agent wakes on its own every so often."""


class Defaults(Block):
    limit_usd: Usd | None = Field(default=None, alias="limitUsd")
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

    _source: str = PrivateAttr("agents.yaml")
    _tree: Any = PrivateAttr(None)
    """The YAML as read, kept so a problem found after loading still names its line."""

    def explain(self, loc: list[str], message: str) -> str:
        """A problem found after loading (a key missing from the environment),
        said as a load error says it: the file, the line, the key."""
        return _locate(self._tree, loc, self._source, message)

    @model_validator(mode="after")
    def _with_embedded(self) -> Config:
        self.providers.setdefault(EMBEDDED, EMBEDDED_PROVIDER)
        return self

    def provider_of(self, agent: AgentConfig) -> str:
        return agent.provider or self.defaults.provider

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
    default = config.defaults.limit_usd
    for name, agent in config.agents.items():
        if not AGENT_NAME.match(name):
            return ["agents", name], f"not a valid agent name ({AGENT_NAME_RULE})"
        if agent.provider and agent.provider not in config.providers:
            return ["agents", name, "provider"], "is not one of the providers"
        if agent.limit_usd is not None and default is not None and agent.limit_usd > default:
            return ["agents", name, "limitUsd"], (
                f"${agent.limit_usd:.2f} is above defaults.limitUsd ${default:.2f}; "
                "an agent's own block can only narrow the default"
            )
    return None


def load_config(path: Path | None) -> Config:
    """Read and validate agents.yaml; `None` gives the built-in defaults
    (the embedded model, no ceiling)."""
    if path is None:
        return Config()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror}.") from None
    return parse_config(text, str(path))


def parse_config(text: str, source: str = "agents.yaml") -> Config:
    try:
        data = YAML(typ="rt").load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{source}{where}: not valid YAML ({_yaml_problem(exc)}).") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of keys.")
    try:
        config = Config.model_validate(_plain(data))
    except ValidationError as exc:
        raise ConfigError(_explain(exc, data, source)) from None
    if problem := incoherence(config):
        loc, message = problem
        raise ConfigError(_locate(data, loc, source, message))
    config._source, config._tree = source, data
    return config


def _yaml_problem(exc: YAMLError) -> str:
    return str(getattr(exc, "problem", None) or exc).strip()


def _plain(value: Any) -> Any:
    """ruamel's round-trip types, as plain Python (floats as exact decimals)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return Decimal(repr(float(value)))
    return value


def _explain(exc: ValidationError, data: Any, source: str) -> str:
    error = exc.errors()[0]
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "unknown key"
    return _locate(data, [str(p) for p in error["loc"]], source, message)


def _locate(data: Any, loc: list[str], source: str, message: str) -> str:
    line = _line_of(data, loc)
    where = f"{source} line {line}" if line else source
    key = ".".join(loc)
    return f"{where}: {key + ': ' if key else ''}{message}."


def _line_of(data: Any, loc: list[str]) -> int | None:
    """The 1-based line of the deepest key of `loc` that the YAML has."""
    line = None
    node = data
    for part in loc:
        lc = getattr(node, "lc", None)
        if isinstance(node, dict) and part in node:
            if lc is not None:
                line = lc.key(part)[0] + 1
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            if lc is not None:
                line = lc.item(int(part))[0] + 1
            node = node[int(part)]
        else:
            break
    return line
