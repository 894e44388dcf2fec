"""The blocks of agents.yaml that say where the models are (`providers:`)
and what they cost (`pricing:`), with the embedded provider every plane has."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from plane.config.names import EMBEDDED, EMBEDDED_MODEL, ENV_NAME
from plane.config.values import Block, Usd, http_url


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
        return None if url is None else http_url(url)

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
