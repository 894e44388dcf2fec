"""What a gateway request asks for, as far as its cost goes: the prompt it
shows, the answers and tokens it lets the model write, and what the provider
adds that the body does not show.

A ceiling in dollars is only as good as this reading. A client decides what
each call costs, and the body says less than the bill when:

- it asks for several answers (Chat Completions' `n`): each is billed;
- the provider holds or fetches context: a `previous_response_id`, a
  conversation or a stored prompt (Responses), a document by URL or file id,
  a PDF (billed by its pages, not its bytes), server tools such as web search
  or code execution, MCP servers the provider calls;
- it sets no output limit.

Those are named in `Asked.unseen`, so that admission knows the call's cost
has no bound it can read, and learns instead (`plane.gateway.learned`).

The prompt is measured two ways: characters, for a likely count of tokens,
and UTF-8 bytes, a bound (a byte-level tokenizer never makes more tokens
than bytes). An inline image is a bounded number of tokens whatever its
size: both providers scale an image down before they count it (how many, a
model of OpenAI's may count far above the rest: `image_tokens`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from plane.gateway.refused import GatewayRefused
from plane.providers.http import MOST_TOKENS

IMAGE_TOKENS = 1600
"""An image's likely tokens: Anthropic counts about 1,600 for the largest
image it keeps (1.15 megapixels); OpenAI's high detail comes to less."""
IMAGE_TOKENS_BOUND = 3000
"""What an image may count at most, on either provider (OpenAI's patch-counted
models come to about 2,500), but for the models of `IMAGE_COUNTS`."""
IMAGE_COUNTS = (
    ("gpt-4o-mini", 2833 + 4 * 5667, 2833 + 8 * 5667),
    ("nano", 2519, 3779),
)
"""(model substring, likely, most) tokens of an image on the OpenAI models
that count one far above the rest, each token priced that much lower:
gpt-4o-mini, 2,833 and 5,667 a 512-px tile (four for a 1024-px image, eight
at most); the nano models, 32-px patches times 2.46 (1,024 for a 1024-px
image, 1,536 at most)."""


def image_tokens(model: str) -> tuple[int, int]:
    """An image's likely and largest count of tokens on `model`."""
    lowered = model.lower()
    for key, likely, most in IMAGE_COUNTS:
        if key in lowered:
            return likely, most
    return IMAGE_TOKENS, IMAGE_TOKENS_BOUND


FRAMING = 100
"""Tokens a provider adds around any prompt (its messages' framing)."""
TOOL_USE_TOKENS = 1000
"""What tool use adds (Anthropic's own prompt for it is 346 tokens)."""
TYPED_TOOL_TOKENS = 1000
"""A typed tool's schema, which the provider writes in (Anthropic's computer,
text editor and bash tools: 735, 700 and 245 tokens)."""
PROMPT_FIELDS = (
    "system",
    "instructions",
    "messages",
    "input",
    "tools",
    "functions",  # Chat Completions' older tool definitions, which OpenAI still takes
    "tool_choice",
    "response_format",  # a structured output's schema: Chat Completions',
    "text",  # Responses' (`text.format`),
    "output_config",  # and Anthropic's (`output_config.format`, once `output_format`)
    "output_format",
)
"""Where a request's prompt is, in any of the three APIs: every field the
provider writes into what the model reads, and bills as prompt tokens."""
TOOL_FIELDS = ("tools", "functions")
SERVER_TOOLS = (
    "web_search",  # a tool's `type`: web_search_20250305 (Anthropic), web_search_preview (OpenAI)
    "web_fetch",
    "code_execution",
    "bash_code_execution",
    "text_editor_code_execution",
    "tool_search",
    "file_search",
    "code_interpreter",
    "image_generation",
    "mcp",
)
"""Tool types the provider runs itself, adding what they find to the context."""
MOST_ANSWERS = 128
"""The most answers (`n`) OpenAI's Chat Completions gives one request."""
SEARCH_MODEL = re.compile(r"search-(preview|api)")
"""OpenAI's search models on Chat Completions (`gpt-4o-search-preview`,
`gpt-5-search-api`): each call searches the web, and is billed the search."""


BACKGROUND = (
    "The plane does not forward background responses (`background: true`): what they "
    "cost is known only after the call, where the plane cannot meter it."
)


@dataclass(frozen=True)
class Asked:
    chars: int = 0
    """Characters of the prompt the body shows (its JSON's keys and values)."""
    bytes: int = 0
    """The same in UTF-8 bytes: a bound on its tokens."""
    images: int = 0
    output_limit: int | None = None
    """The most tokens each answer may have; None: the request sets no limit."""
    choices: int = 1
    """Answers asked for (Chat Completions' `n`)."""
    hour_cache: bool = False
    """Anthropic's 1-hour cache is asked for: its writes cost more."""
    unseen: tuple[str, ...] = ()
    """What the provider adds to the prompt that the body does not show."""
    previous_response: str | None = None
    """Responses' `previous_response_id`: that response is part of the prompt."""
    context_key: str | None = None
    """A stored prompt or conversation the provider holds (`prompt:ID`,
    `conversation:ID`): the ledger's last call with it says its size."""
    searches: int | None = 0
    """The most web searches the call may make and bill (None: no bound given)."""
    searched: int = 0
    """Web searches the call is billed whatever its reply says of them
    (a Chat Completions search model's one search a call)."""
    predicted: int = 0
    """Bytes of a predicted output (Chat Completions' `prediction`): what of
    it the answer does not use is billed as output, a token a byte at most."""
    variant: tuple[tuple[str, str], ...] = ()
    """How the request asks to be served, where that is billed apart
    (OpenAI's `service_tier`, Anthropic's `speed`)."""
    framing: int = 0
    """Tokens the provider adds around the prompt that its bytes do not show:
    the system prompt of tool use, and the definitions of its own typed tools."""
    container_gb: int = 1
    """The memory, in GB, of a container the request's `code_interpreter`
    asks for (Responses), by which each container it runs code in is billed."""
    spoken: bool = False
    """The answers may be audio (Chat Completions' `modalities` with
    "audio"): each of their tokens billed at the model's audio rate."""
    fallbacks: tuple[str, ...] = ()
    """Other models the request lets the provider answer with, if the one
    it names cannot (a router's fallbacks: OpenRouter's `models`): the call
    is charged as whichever answers, so it may cost what the dearest does."""

    @property
    def unbounded(self) -> bool:
        """Nothing in the request bounds what the call may cost."""
        return bool(self.unseen) or self.output_limit is None or self.searches is None


@dataclass
class _Tally:
    chars: int = 0
    bytes: int = 0
    images: int = 0
    unseen: list[str] = field(default_factory=list)
    hour_cache: bool = False
    framing: int = FRAMING

    def text(self, value: str) -> None:
        self.chars += len(value)
        self.bytes += len(value) if value.isascii() else len(value.encode(errors="replace"))

    def walk(self, value: Any) -> None:
        """Every key and value of the prompt, with images and documents apart."""
        if isinstance(value, str):
            self.text(value)
        elif isinstance(value, list):
            for item in value:
                self.walk(item)
        elif isinstance(value, dict):
            if not self._part(value):
                for key, item in value.items():
                    self.text(key)
                    self.walk(item)
            self.cached(value.get("cache_control"))
        elif value is not None:
            self.text(str(value))

    def cached(self, control: Any) -> None:
        """A `cache_control` that asks for Anthropic's 1-hour cache, whose writes cost more."""
        if isinstance(control, dict) and control.get("ttl") == "1h":
            self.hour_cache = True

    def _part(self, part: dict[str, Any]) -> bool:
        """A part whose cost its bytes do not tell; True once counted."""
        kind = part.get("type")
        if kind in ("image", "image_url", "input_image"):
            source = part.get("source")
            if isinstance(source, dict) and source.get("type") == "file":
                self.unseen.append("an image by file id")
            self.images += 1
            return True
        if kind == "document":
            return self._document(part.get("source"))
        if kind in ("file", "input_file", "container_upload"):
            self.unseen.append("a file")
            return True
        if kind == "item_reference":
            self.unseen.append("a stored item")
            return True
        return False

    def tools(self, tools: Any) -> None:
        """The tools' definitions; those the provider runs itself; and what
        it adds for them (tool use's own prompt, its typed tools' schemas)."""
        self.walk(tools)
        listed = tools if isinstance(tools, list) else []
        self.framing += TOOL_USE_TOKENS if listed else 0
        for tool in listed:
            kind = tool.get("type") if isinstance(tool, dict) else None
            if isinstance(kind, str) and kind.startswith(SERVER_TOOLS):
                self.unseen.append(kind)
            elif isinstance(kind, str) and kind not in ("function", "custom"):
                self.framing += TYPED_TOOL_TOKENS

    def _document(self, source: Any) -> bool:
        """Anthropic's document: its text counts as text; a PDF is billed by its
        pages, a URL or a file by what the provider fetches."""
        if not isinstance(source, dict):
            return False
        kind = source.get("type")
        if kind in ("text", "content"):
            return False
        if kind == "base64" and source.get("media_type") != "application/pdf":
            return False
        self.unseen.append({"url": "a document by URL", "file": "a file"}.get(str(kind), "a PDF"))
        return True


def _int(value: Any) -> int | None:
    """A positive whole number that bounds something (None: it bounds nothing,
    as a limit past any call's tokens does not)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MOST_TOKENS:
        return None
    return value


def _prompt(body: dict[str, Any]) -> _Tally:
    tally = _Tally()
    for key in PROMPT_FIELDS:
        if key in TOOL_FIELDS:
            tally.tools(body.get(key))
        elif key in body:
            tally.walk(body[key])
    return tally


def _variant(body: dict[str, Any], key: str) -> tuple[tuple[str, str], ...]:
    value = body.get(key)
    return ((key, value),) if isinstance(value, str) and value else ()


def _searches(tools: Any) -> int | None:
    """The web searches the request allows: the sum of its search tools'
    `max_uses` (Anthropic's), 0 without one, None when one sets no bound."""
    allowed: int | None = 0
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict) and str(tool.get("type", "")).startswith("web_search"):
            uses = _int(tool.get("max_uses"))
            allowed = None if uses is None or allowed is None else allowed + uses
    return allowed


def _fallbacks(body: dict[str, Any]) -> tuple[str, ...]:
    """The models a router may answer with besides the one named (its
    `models` list, tried in turn when the first fails)."""
    listed = body.get("models")
    named = body.get("model")
    return tuple(
        dict.fromkeys(
            model
            for model in (listed if isinstance(listed, list) else [])
            if isinstance(model, str) and model and model != named
        )
    )


def messages_asked(body: dict[str, Any]) -> Asked:
    """Anthropic Messages: `max_tokens` bounds each answer (extended thinking
    included); server tools and MCP servers add what they find."""
    tally = _prompt(body)
    tally.cached(body.get("cache_control"))  # automatic caching, asked for the whole request
    if body.get("mcp_servers"):
        tally.unseen.append("MCP servers")
    if body.get("container"):
        tally.unseen.append("a container")
    return Asked(
        tally.chars,
        tally.bytes,
        tally.images,
        output_limit=_int(body.get("max_tokens")),
        hour_cache=tally.hour_cache,
        unseen=tuple(dict.fromkeys(tally.unseen)),
        searches=_searches(body.get("tools")),
        variant=_variant(body, "speed"),
        framing=tally.framing,
        fallbacks=_fallbacks(body),
    )


def _choices(value: Any) -> int:
    """Chat Completions' `n`: 1 when absent (or null), else a whole number
    up to OpenAI's `MOST_ANSWERS`. Servers built on pydantic (vLLM) read
    `"16"`, `16.0` and `" 16 "` as sixteen answers, each billed: such an `n`
    is refused (`GatewayRefused`), never counted as one answer."""
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MOST_ANSWERS:
        said = json.dumps(value)
        said = said if len(said) <= 40 else said[:39] + "…"
        raise GatewayRefused(
            400, f"The request's `n` is not a whole number of answers from 1 to 128: {said}."
        )
    return value


def chat_asked(body: dict[str, Any]) -> Asked:
    """Chat Completions: `n` answers, each up to `max_completion_tokens` or
    the older `max_tokens` (the larger, where both are given), and what a
    `prediction` holds; a search model (by its name, or asked with
    `web_search_options`) searches the web once a call, billed whatever its
    usage says. Refuses an `n` that is not a whole
    number (`GatewayRefused`)."""
    tally = _prompt(body)
    searches: int | None = 0
    model = body.get("model")
    searching = isinstance(model, str) and SEARCH_MODEL.search(model.lower()) is not None
    if searching or body.get("web_search_options") is not None:
        tally.unseen.append("web search")
        searches = None
    predicted = _Tally()
    predicted.walk(body.get("prediction"))
    return Asked(
        tally.chars,
        tally.bytes,
        tally.images,
        output_limit=_larger_limit(body, "max_completion_tokens", "max_tokens"),
        choices=_choices(body.get("n")),
        unseen=tuple(dict.fromkeys(tally.unseen)),
        searches=searches,
        searched=1 if searches is None else 0,
        predicted=predicted.bytes,
        variant=_variant(body, "service_tier"),
        framing=tally.framing,
        spoken=_spoken(body),
        fallbacks=_fallbacks(body),
    )


def _larger_limit(body: dict[str, Any], *keys: str) -> int | None:
    """The output limit of a request that may state it in any of `keys`: the
    larger of those it gives, since the server may honour either
    (`max_completion_tokens: 10` beside `max_tokens: 4000` may write 4,000
    tokens on a server that reads only `max_tokens`). A null one is absent
    (`max_completion_tokens: null` beside `max_tokens: 50` is bounded by the
    50); one that bounds nothing leaves the answer unbounded (None), as does
    giving none."""
    stated = [_int(body[key]) for key in keys if body.get(key) is not None]
    if not stated or None in stated:
        return None
    return max(limit for limit in stated if limit is not None)


def _spoken(body: dict[str, Any]) -> bool:
    """Whether the answers may be audio: asked in `modalities`, or given a voice (`audio`)."""
    modalities = body.get("modalities")
    asked = isinstance(modalities, list) and "audio" in modalities
    return asked or body.get("audio") is not None


def responses_asked(body: dict[str, Any]) -> Asked:
    """Responses: the prompt may be a previous response, a conversation or a
    stored prompt the provider holds, besides what the body shows. Refuses a
    background response (`GatewayRefused`): its usage comes only when the
    client fetches it, past the plane."""
    if body.get("background") not in (None, False):
        raise GatewayRefused(400, BACKGROUND)
    tally = _prompt(body)
    previous = body.get("previous_response_id")
    previous = previous if isinstance(previous, str) and previous else None
    if previous:
        tally.unseen.append("previous_response_id")
    key = None
    prompt = body.get("prompt")
    if isinstance(prompt, dict) and isinstance(prompt.get("id"), str):
        tally.unseen.append("a stored prompt")
        tally.walk(prompt.get("variables"))
        key = f"prompt:{prompt['id']}"
    conversation = body.get("conversation")
    if isinstance(conversation, dict):
        conversation = conversation.get("id")
    if isinstance(conversation, str) and conversation:
        tally.unseen.append("a conversation")
        key = f"conversation:{conversation}"
    searching = any(kind.startswith("web_search") for kind in tally.unseen)
    return Asked(
        tally.chars,
        tally.bytes,
        tally.images,
        output_limit=_int(body.get("max_output_tokens")),
        unseen=tuple(dict.fromkeys(tally.unseen)),
        previous_response=previous,
        context_key=key,
        searches=None if searching else 0,
        variant=_variant(body, "service_tier"),
        framing=tally.framing,
        container_gb=_container_gb(body.get("tools")),
        fallbacks=_fallbacks(body),
    )


CONTAINER_GB = {"1g": 1, "4g": 4, "16g": 16, "64g": 64}
"""The memory sizes of OpenAI's code interpreter containers (`memory_limit`)."""


def _container_gb(tools: Any) -> int:
    """The GB of memory the request's `code_interpreter` containers have: as
    its automatic container's `memory_limit` asks (1 GB without one), or,
    for a size the plane does not know, the largest."""
    sizes = [1]
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict) or tool.get("type") != "code_interpreter":
            continue
        container = tool.get("container")
        if not isinstance(container, dict):
            continue  # a container made beforehand, by its id: its size is not said here
        limit = container.get("memory_limit")
        sizes.append(
            1 if limit is None else CONTAINER_GB.get(str(limit), max(CONTAINER_GB.values()))
        )
    return max(sizes)
