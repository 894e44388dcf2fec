"""Cost by tool: each call's cost split by what its prompt held, to the
last digit of what the ledger charged it.

**The rule.** A call's prompt is read in order: the system prompt and the
tool schemas (`prompt`), then the history — people's and the model's own
words (`messages`) and each tool's results (`tool`, named by the tool that
gave them and, for an MCP tool, its server). Its input tokens are shared
out over those pieces in proportion to their characters, in that order.
The provider bills a prompt's tokens at up to four rates, and the cached
prefix is the oldest part of it: so the first tokens are the ones read from
the cache, then those written to Anthropic's 1-hour cache, then those
written to its 5-minute one, and the rest are uncached. Each piece is
weighed at the rates its own tokens were billed, and the call's input cost
(its cost without the answer) is shared out by those weights, exactly: the
shares add up to the input cost, and with the answer's part (`output`:
the output tokens and any web searches) to the call's cost, to the last
digit. A tool whose results sit early in a long session is mostly billed
at the cache-read rate; one whose result just arrived, at the full rate.

Pure: the pieces come from the plane's own request (`of_request`) or a
gateway client's (plane/gateway/prompt_parts.py), the prices from the
call's `Pricer`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Literal

from plane.providers.base import CompletionRequest
from plane.wire.protocol import Usage

PartKind = Literal["prompt", "messages", "tool", "output"]

SHARE = Decimal("1e-12")
"""Each share is rounded to this (a millionth of a cent); the largest takes
what rounding left over, so the shares add up exactly."""


@dataclass(frozen=True)
class Piece:
    """One part of a prompt, in the order the provider reads it."""

    part: PartKind
    chars: int
    tool: str | None = None
    mcp_server: str | None = None


@dataclass(frozen=True)
class Part:
    """What a call's cost is attributed to, as the ledger keeps it (`call_parts`)."""

    part: PartKind
    tool: str | None
    mcp_server: str | None
    input_tokens: int
    cost_usd: Decimal


Price = Callable[[Usage], Decimal]
"""What a usage costs, at the call's model's prices (no web searches)."""


def attribute(pieces: Sequence[Piece], usage: Usage, cost: Decimal, price: Price) -> list[Part]:
    """`cost` (the call's, as charged) split over `pieces` and the answer."""
    input_cost = min(cost, price(usage.model_copy(update={"output_tokens": 0})))
    kept = [p for p in pieces if p.chars > 0]
    total_chars = sum(p.chars for p in kept)
    answer = Part("output", None, None, 0, cost - input_cost)
    if not kept or not usage.input_tokens:
        # Nothing to share out: an input cost with no prompt seen is the prompt's.
        prompt = Part("prompt", None, None, usage.input_tokens, input_cost)
        return [prompt, answer] if input_cost else [answer]
    spans = _spans(kept, usage.input_tokens, total_chars)
    rates = _rates(usage, price)
    weights = [_weight(span, usage, rates) for span in spans]
    shares = _shares(input_cost, weights)
    tokens = _whole(spans, usage.input_tokens)
    merged: dict[tuple[PartKind, str | None, str | None], Part] = {}
    for piece, share, count in zip(kept, shares, tokens, strict=True):
        key = (piece.part, piece.tool, piece.mcp_server)
        held = merged.get(key)
        merged[key] = Part(
            piece.part,
            piece.tool,
            piece.mcp_server,
            count + (held.input_tokens if held else 0),
            share + (held.cost_usd if held else Decimal(0)),
        )
    return [*merged.values(), answer]


def of_request(request: CompletionRequest) -> list[Piece]:
    """The plane's own request, as pieces: the system prompt and tool
    schemas, then each message (a tool result by the tool kept with it)."""
    schemas = sum(
        len(json.dumps(t.parameters)) + len(t.name) + len(t.description) for t in request.tools
    )
    pieces = [Piece("prompt", len(request.system) + schemas)]
    for message in request.messages:
        if message.role == "tool":
            pieces.append(Piece("tool", len(message.content), message.tool, message.mcp_server))
        else:
            called = sum(len(c.name) + len(c.arguments) for c in message.tool_calls)
            pieces.append(Piece("messages", len(message.content) + called))
    return pieces


def _spans(pieces: Sequence[Piece], tokens: int, chars: int) -> list[tuple[Fraction, Fraction]]:
    """Where each piece's tokens lie in the prompt, [start, end)."""
    spans, at = [], 0
    for piece in pieces:
        start = Fraction(tokens * at, chars)
        at += piece.chars
        spans.append((start, Fraction(tokens * at, chars)))
    return spans


def _bands(usage: Usage) -> list[tuple[str, int, int]]:
    """The prompt's tokens by how they were billed, oldest first: read from
    the cache, written for an hour, written for five minutes, uncached."""
    read = min(usage.cache_read_tokens, usage.input_tokens)
    written = min(usage.cache_write_tokens, usage.input_tokens - read)
    hour = min(usage.cache_write_1h_tokens, written)
    edges = [("read", read), ("hour", hour), ("write", written - hour)]
    bands, at = [], 0
    for name, count in edges:
        bands.append((name, at, at + count))
        at += count
    bands.append(("fresh", at, usage.input_tokens))
    return bands


def _rates(usage: Usage, price: Price) -> dict[str, Decimal]:
    """Each band's price per token, at this call's size (a table whose
    rates change past a number of tokens prices each band as this call)."""
    n = usage.input_tokens
    return {
        "fresh": price(Usage(input_tokens=n)) / n,
        "read": price(Usage(input_tokens=n, cache_read_tokens=n)) / n,
        "write": price(Usage(input_tokens=n, cache_write_tokens=n)) / n,
        "hour": price(Usage(input_tokens=n, cache_write_tokens=n, cache_write_1h_tokens=n)) / n,
    }


def _weight(span: tuple[Fraction, Fraction], usage: Usage, rates: dict[str, Decimal]) -> Fraction:
    """What the piece's tokens cost at the rates each was billed."""
    start, end = span
    weight = Fraction(0)
    for band, low, high in _bands(usage):
        overlap = min(end, Fraction(high)) - max(start, Fraction(low))
        if overlap > 0:
            weight += overlap * Fraction(rates[band])
    return weight


def _shares(total: Decimal, weights: Sequence[Fraction]) -> list[Decimal]:
    """`total` split by `weights`, each share rounded, the largest taking
    the remainder: they add up to `total` exactly."""
    whole = sum(weights, Fraction(0))
    if not whole:
        weights, whole = [Fraction(1)] * len(weights), Fraction(len(weights))
    shares = [_decimal(Fraction(total) * w / whole).quantize(SHARE) for w in weights]
    largest = max(range(len(shares)), key=lambda n: weights[n])
    shares[largest] += total - sum(shares, Decimal(0))
    return shares


def _decimal(fraction: Fraction) -> Decimal:
    return Decimal(fraction.numerator) / Decimal(fraction.denominator)


def _whole(spans: Iterable[tuple[Fraction, Fraction]], tokens: int) -> list[int]:
    """Each piece's tokens as whole numbers that add up to the prompt's."""
    edges = [round(end) for _, end in spans]
    counts, before = [], 0
    for edge in edges:
        counts.append(edge - before)
        before = edge
    counts[-1] += tokens - before
    return counts
