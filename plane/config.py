"""agents.yaml, as pydantic models. The docstring under each field is the
user's documentation of that key.

`load_config()` is the one reader of the file. A bad file raises one
`ConfigError` naming the key, the line and what is wrong, and the plane does
not start half-configured. The reading is bounded before YAML sees a byte of
it: a file that is not UTF-8 text, is too large, nests too deep, or whose
aliases expand past a fixed number of values is refused with its line, so no
file can hang the start or exhaust memory (an alias bomb is a few hundred
bytes). The bounds grow with the file, as its honest cost does: 10,000
agents are read, a bomb of any size is not. An empty file is refused too:
it would silently drop every ceiling.
"""

from __future__ import annotations

import codecs
import difflib
import os
import re
import stat
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal, NoReturn
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
from ruamel.yaml import YAML
from ruamel.yaml.constructor import ConstructorError, RoundTripConstructor
from ruamel.yaml.error import YAMLError
from ruamel.yaml.reader import ReaderError
from ruamel.yaml.scanner import RoundTripScanner, ScannerError

from plane.errors import ConfigError

EMBEDDED = "embedded"
"""The provider name of the model the plane runs itself (llama.cpp, SmolLM2)."""
EMBEDDED_MODEL = "smollm2-135m"

AGENT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
AGENT_NAME_RULE = (
    "1–32 characters: lower-case letters, digits, '-' and '_', starting with a letter or digit"
)

Usd = Annotated[Decimal, Field(ge=0, le=1_000_000, allow_inf_nan=False, decimal_places=6)]


def _in_cents(amount: Decimal) -> Decimal:
    """A ceiling is dollars and cents, as /limit takes it: $0.001 would read
    `$0.00`, a pause by its figure, while it lets calls through."""
    if amount != amount.quantize(Decimal("0.01")):
        raise ValueError(f"{amount} has more than two decimals; a limit is in dollars and cents")
    return amount


Limit = Annotated[Usd, AfterValidator(_in_cents)]

MAX_CONFIG_BYTES = 4 << 20
"""A config is read whole, so its size is bounded: 100,000 agents of one line
each fit (`  agent-000001: {limitUsd: 2}`, 30 bytes). Reading holds about
120 bytes of memory a byte of the file, so the largest takes ~500 MB."""
FREE_TOKENS = 10_000
"""YAML tokens (keys, values, brackets) any file may have, whatever its size."""
TOKENS_PER_3_CHARACTERS = 2
"""Past `FREE_TOKENS`, at most two tokens every three characters read, checked
as the file is read. Each token takes about the same time (~20 µs, nesting
being bounded), so the read costs in proportion to the file's size, and a
file denser than any honest one is refused early instead of read whole.
Honest files have a token every 1.7 to 5 characters (`  agent-0001: {}` has 5
in 17; compact JSON with short names, `"a1":{},`, one every 1.8); the
densest YAML has one a character (`[1,1,1,…]`)."""
MAX_DEPTH = 32
"""Nesting levels of mappings and lists; agents.yaml needs four."""
FREE_VALUES = 50_000
"""Values any file may expand to once its aliases are expanded."""
VALUES_PER_CHARACTER = 1
"""Past `FREE_VALUES`, values a character of the file may expand to. Written
out, a value takes a character or more; an alias used as a template (`agent:
*base`) expands to a few values in twenty characters. A billion-laughs file
is tiny and expands to a billion."""

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _known_tool(name: str) -> str:
    # The registry is the one list of tools. Imported here, not at the top,
    # so that the tools (and what they import) never depend on the config.
    from plane.tools.registry import TOOLS

    if name in TOOLS:
        return name
    close = difflib.get_close_matches(name, list(TOOLS), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise ValueError(f"{name!r} is not a tool ({hint}the tools are {', '.join(TOOLS)})")


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

    compress: bool = False
    """Pass tool results inside the client's requests through the plane's
    deterministic compressor (never text people or models wrote)."""


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
    """The tools this agent may use (default: all), by their names in the
    tool registry; a name that is not one is refused, with the list."""
    workspace: Path | None = None
    """The agent's working directory (default: a directory under the plane's home)."""
    ambient: AmbientConfig | None = None
    """Ambient turns: the agent wakes on its own every so often."""
    gateway: GatewayConfig | None = None
    """Make this a gateway agent: it takes no turns of its own; a client
    outside the plane spends through it (see `plane key` and `plane gateway env`)."""


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


AlertKind = Literal["amber", "held", "resumed", "ask_refused"]
ALERT_KINDS: tuple[AlertKind, ...] = ("amber", "held", "resumed", "ask_refused")


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
    turn), `resumed`, `ask_refused` (an agent asked for more; the operator is needed)."""
    retries: int = Field(default=3, ge=0, le=10)
    """Tries after the first, with exponential backoff, before the alert is
    logged as not delivered."""
    timeout_s: float = Field(default=5, gt=0, le=60)
    """Seconds one POST may take."""

    @field_validator("webhook", "ntfy")
    @classmethod
    def _valid_url(cls, url: str | None) -> str | None:
        return None if url is None else _http_url(url)

    @model_validator(mode="after")
    def _somewhere(self) -> NotifyConfig:
        if self.webhook is None and self.ntfy is None:
            raise ValueError("needs a webhook or an ntfy URL (or both)")
        return self


class FleetConfig(Block):
    limit_usd: Limit | None = Field(default=None, alias="limitUsd")
    """All agents' spend together, per UTC day, across every plane on the
    store. Omit it for no fleet ceiling."""


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
    store: str | None = None
    """Where the ledger, conversations and agents live: omitted, the SQLite
    file in the plane's home; `postgresql://…`, a PostgreSQL database that
    several planes share (README, "Several machines"). `PLANE_STORE`, when
    set, is used instead."""
    fleet: FleetConfig = FleetConfig()

    @field_validator("store")
    @classmethod
    def _a_store_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"{value!r} is not {STORE_RULE}")
        return value

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
        """The agent's provider; with none named, the default, unless another
        provider lists the agent's model and the default does not."""
        if agent.provider:
            return agent.provider
        default, model = self.defaults.provider, self.model_of(agent)
        if default in self.providers and model in self.providers[default].models:
            return default
        listing = [name for name, p in self.providers.items() if model in p.models]
        return listing[0] if listing else default

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
        if agent.limit_usd is not None and default is not None and agent.limit_usd > default:
            return ["agents", name, "limitUsd"], (
                f"${agent.limit_usd:.2f} is above defaults.limitUsd ${default:.2f}; "
                "an agent's own block can only narrow the default"
            )
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


def load_config(path: Path | None) -> Config:
    """Read and validate agents.yaml; `None` gives the built-in defaults
    (the embedded model, no ceiling). A file with nothing in it is refused:
    it would run every agent with no ceiling, which is not what its author
    meant, and nothing would say so."""
    if path is None:
        return Config()
    source = str(path)
    text = _text(_read(path), source)
    data = _document(text, source)
    if data is None:
        raise ConfigError(
            f"{source}: the file is empty (no settings, only blank lines or comments), "
            "so it would set no ceiling; write the settings in it, or remove it to run "
            "on the built-in defaults."
        )
    return _validated(data, source, len(text))


def parse_config(text: str, source: str = "agents.yaml") -> Config:
    """A config from YAML text; empty text is the built-in defaults."""
    data = _document(text, source)
    return _validated({} if data is None else data, source, len(text))


def _read(path: Path) -> bytes:
    """The file's bytes, at most one more than the limit. Opened without
    blocking, so a FIFO named by mistake is refused instead of waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror}.") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise ConfigError(f"Cannot read {path}: it is a directory, not a file.")
        if not stat.S_ISREG(mode):
            raise ConfigError(f"Cannot read {path}: it is not a regular file.")
        with os.fdopen(fd, "rb", closefd=False) as file:
            return file.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror}.") from None
    finally:
        os.close(fd)


def _text(raw: bytes, source: str) -> str:
    """UTF-8 text, or one sentence saying what the bytes are instead."""
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{source}: the file is over {MAX_CONFIG_BYTES >> 20} MiB; not a config.")
    if raw.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise ConfigError(f"{source}: the file is UTF-32 text; save it as UTF-8.")
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or _utf16_without_bom(raw):
        raise ConfigError(f"{source}: the file is UTF-16 text; save it as UTF-8.")
    raw = raw.removeprefix(codecs.BOM_UTF8)
    if (nul := raw.find(b"\0")) >= 0:
        line = raw.count(b"\n", 0, nul) + 1
        raise ConfigError(f"{source} line {line}: a NUL byte; this is a binary file, not YAML.")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{source} line {line}: byte 0x{raw[exc.start]:02x} is not UTF-8 text; "
            "save the file as UTF-8."
        ) from None


def _utf16_without_bom(raw: bytes) -> bool:
    """ASCII saved as UTF-16: every other byte is a NUL."""
    half = len(raw) // 2
    return half >= 2 and max(raw[0::2].count(0), raw[1::2].count(0)) >= half * 0.8


def _document(text: str, source: str) -> Any:
    """The YAML as read (ruamel's round-trip types, which know their lines)."""
    yaml = YAML(typ="rt")
    yaml.Scanner = _BoundedScanner
    yaml.Constructor = _Constructor
    try:
        return yaml.load(text)
    except ReaderError as exc:
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        char = f"U+{exc.character:04X}" if isinstance(exc.character, int) else "a character"
        raise ConfigError(
            f"{source} line {line}: not valid YAML ({char} is a control character; "
            "is this a binary file?)."
        ) from None
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        if isinstance(exc, _TooMuch):
            raise ConfigError(f"{source}{where}: {exc.problem}; not read further.") from None
        raise ConfigError(f"{source}{where}: not valid YAML ({_yaml_problem(exc)}).") from None
    except RecursionError:  # a nesting the bounds above did not foresee
        raise ConfigError(f"{source}: nested too deeply to read.") from None


def _validated(data: Any, source: str, characters: int) -> Config:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping of keys.")
    try:
        config = Config.model_validate(_Plain(data, source, characters).value(data))
    except ValidationError as exc:
        raise ConfigError(_explain(exc, data, source)) from None
    if problem := incoherence(config):
        loc, message = problem
        raise ConfigError(_locate(data, loc, source, message))
    config._source, config._tree = source, data
    return config


def _yaml_problem(exc: YAMLError) -> str:
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    if problem and context and str(problem).startswith("but "):
        problem = f"{context}, {problem}"
    text = str(problem or context or exc)
    return " ".join(text.split())


class _TooMuch(ScannerError):
    """A file past one of the bounds: refused where the bound was crossed."""


def _bound(mark: Any, problem: str) -> _TooMuch:
    return _TooMuch(None, None, problem, mark)


_TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep (agents.yaml needs four)"


class _BoundedScanner(RoundTripScanner):
    """ruamel's scanner, refusing a file before it costs more than its bounds:
    every open bracket makes each later token slower (2,000 nested brackets
    take minutes), and deep block nesting overflows the composer's stack."""

    def fetch_more_tokens(self) -> Any:
        tokens, characters = self.tokens_taken + len(self.tokens), self.reader.index
        if tokens > FREE_TOKENS + characters * TOKENS_PER_3_CHARACTERS // 3:
            raise _bound(self.reader.get_mark(), _too_dense(tokens, characters))
        return super().fetch_more_tokens()

    def fetch_flow_collection_start(self, TokenClass: Any, to_push: str) -> None:
        if self.flow_level + len(self.indents) >= MAX_DEPTH:
            raise _bound(self.reader.get_mark(), _TOO_DEEP)
        super().fetch_flow_collection_start(TokenClass, to_push)

    def add_indent(self, column: int) -> bool:
        if self.indent < column and self.flow_level + len(self.indents) >= MAX_DEPTH:
            raise _bound(self.reader.get_mark(), _TOO_DEEP)
        return bool(super().add_indent(column))


def _too_dense(tokens: int, characters: int) -> str:
    return (
        f"{tokens:,} keys, values and brackets in its first {characters:,} characters, "
        "denser than any agents.yaml (two every three characters past the first "
        f"{FREE_TOKENS:,})"
    )


class _Constructor(RoundTripConstructor):
    """Values YAML reads but Python cannot make (`!!int zz`, a 5,000-digit
    number) are errors at their line, like any other YAML error."""

    def construct_non_recursive_object(self, node: Any, tag: str | None = None) -> Any:
        try:
            return super().construct_non_recursive_object(node, tag)
        except (ValueError, OverflowError, TypeError):
            value = str(getattr(node, "value", ""))
            shown = value if len(value) <= 20 else value[:20] + "…"
            problem = f"cannot read {shown!r} as {_kind(node)}"
            raise ConstructorError(None, None, problem, node.start_mark) from None


def _kind(node: Any) -> str:
    tag = str(getattr(node, "tag", ""))
    kind = tag.rsplit(":", 1)[-1]
    names = {"int": "a whole number", "float": "a number"}
    return names.get(kind, f"!!{kind}" if kind else "a value")


class _Plain:
    """ruamel's round-trip types as plain Python (floats as exact decimals),
    each shared (aliased) value converted once. Counts the values as the
    model would see them, aliases expanded, and refuses past what the file's
    size allows (`FREE_VALUES`, `VALUES_PER_CHARACTER`) before anything walks
    the expansion; refuses strings that cannot be stored or sent (lone
    surrogates)."""

    def __init__(self, tree: Any, source: str, characters: int) -> None:
        self._tree, self._source = tree, source
        self._characters = characters
        self._most = FREE_VALUES + characters * VALUES_PER_CHARACTER
        self._done: dict[int, tuple[Any, int]] = {}
        self._open: set[int] = set()
        self._loc: list[str] = []

    def value(self, value: Any) -> Any:
        return self._walk(value)[0]

    def _walk(self, value: Any) -> tuple[Any, int]:
        if isinstance(value, dict | list):
            return self._container(value)
        if isinstance(value, str):
            return self._text(value), 1
        if isinstance(value, float):
            return Decimal(repr(float(value))), 1
        return value, 1

    def _container(self, value: dict[Any, Any] | list[Any]) -> tuple[Any, int]:
        ident = id(value)
        if ident in self._done:
            return self._done[ident]
        if ident in self._open:
            self._fail("an alias refers to the value it is inside of")
        self._open.add(ident)
        size = 1
        plain: Any
        if isinstance(value, dict):
            plain = {}
            for key, item in value.items():
                name = self._text(str(key))
                self._loc.append(name)
                plain[name], n = self._walk(item)
                self._loc.pop()
                size += n
        else:
            plain = []
            for index, item in enumerate(value):
                self._loc.append(str(index))
                converted, n = self._walk(item)
                self._loc.pop()
                plain.append(converted)
                size += n
        if size > self._most:
            self._fail(
                f"its aliases expand it to more than {self._most:,} values, far more than "
                f"its {self._characters:,} characters write out"
            )
        self._open.discard(ident)
        self._done[ident] = (plain, size)
        return plain, size

    def _text(self, text: str) -> str:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            self._fail("a string with a lone surrogate (\\ud800–\\udfff), which is not text")
        return text

    def _fail(self, message: str) -> NoReturn:
        raise ConfigError(_locate(self._tree, self._loc, self._source, message))


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
