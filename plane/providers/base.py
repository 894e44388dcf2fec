"""What the plane asks of an LLM provider, whatever its wire protocol.

A provider turns a `CompletionRequest` into one `Completion`: the text, any
tool calls, and the usage the provider reported, normalised (see
`plane.wire.protocol.Usage`). Streaming is the provider's business: text reaches
`on_text` as it arrives, and the call still returns one `Completion`.

Each provider owns one pooled `aiohttp.ClientSession` (made at its first
call, closed by `aclose()`). Tests point it at a real local server: by its
URL, or, where the URL must stay a provider's own, through a connector that
reaches the test's server whatever the URL (`plane.providers.connections`);
nothing monkeypatches aiohttp.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from plane.errors import ProviderReplyError
from plane.tools.base import ToolSpec as ToolSpec  # what a request offers: the tools' own schema
from plane.wire.protocol import Usage

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str
    """The arguments as the model wrote them: JSON text, not yet trusted."""


@dataclass(frozen=True)
class ChatMessage:
    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    """For role `tool`: the call this message answers."""
    tool: str | None = None
    """For role `tool`: the tool that gave it, as people name it (`run_command`,
    `time.get_current_time`). Kept with the history, never sent: what a tool
    result's share of later calls is attributed to."""
    mcp_server: str | None = None
    """For role `tool`, from an MCP server's tool: that server."""


ToolMode = Literal["native", "json_schema"]
"""native: the provider's own tool calling. json_schema: for models that do
not call tools, a JSON schema forced through `response_format` makes the model
answer with either a tool call or a final answer, parsed back into the same
`Completion` shape."""


@dataclass(frozen=True)
class CompletionRequest:
    model: str
    system: str
    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSpec, ...] = ()
    tool_mode: ToolMode = "native"
    max_output_tokens: int = 1024
    stream: bool = True
    temperature: float | None = None
    """None: the provider's default."""
    frequency_penalty: float | None = None
    """OpenAI-compatible only; None: the provider's default."""
    cache_breakpoints: tuple[int, ...] = ()
    """Indexes into `messages` after which a provider with explicit prompt
    caching (Anthropic) places a cache breakpoint. The system prompt always
    gets one. Ignored by providers that cache automatically."""


@dataclass(frozen=True)
class Completion:
    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    model: str
    """The model the provider says answered."""
    usage_estimated: bool = False
    """No usage came back (a stream cut short); `usage` is an estimate."""
    stop_reason: str = ""


class BrokenReply(ProviderReplyError):
    """The provider answered (so it may bill the call), but the reply broke
    off or could not be read before anything usable arrived. `usage` is an
    estimate to charge: a call is never free."""

    usage: Usage = Usage()


OnText = Callable[[str], Awaitable[None]]


class Provider(Protocol):
    name: str
    """The provider's name in agents.yaml (also what the ledger records)."""

    async def complete(
        self, request: CompletionRequest, on_text: OnText | None = None
    ) -> Completion:
        """One LLM call. Raises `plane.errors.ProviderError` (after retries)
        when no usable completion came back."""
        ...

    async def aclose(self) -> None: ...
