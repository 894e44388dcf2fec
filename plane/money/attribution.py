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
digit. Each piece's share is rounded down to a trillionth of a dollar
(`SHARE`), and the trillionths rounding left over go one each to the shares
it cut the most: so no share is below zero, however many small ones a cheap
call has, and each is within a trillionth of its exact part (what of the
cost is finer than a trillionth goes to the largest). A tool whose results
sit early in a long session is mostly billed at the cache-read rate; one
whose result just arrived, at the full rate.

Pure: the pieces come from the plane's own request (`of_request`) or a
gateway client's (plane/gateway/prompt_parts.py), the prices from the
call's `Pricer`.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Literal, NamedTuple

from plane.providers.base import ChatMessage, CompletionRequest, ToolSpec
from plane.providers.once import OncePerObject
from plane.wire.protocol import Usage

PartKind = Literal["prompt", "messages", "tool", "output"]

SHARE = Decimal("1e-12")
"""Each share is rounded down to this (a trillionth of a dollar); what rounding
left over goes a `SHARE` each to the shares it took the most from, so the
shares add up exactly and none is below zero."""
SCALE = -12
ONE_SHARE = 10**12
"""`SHARE` as a power of ten, and how many make a dollar."""


class Piece(NamedTuple):
    """One part of a prompt, in the order the provider reads it (a tuple:
    a request's history makes hundreds a call, and a tuple is made fastest)."""

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

Rates = Callable[[int], Mapping[str, Fraction]]
"""Each band's price a token for a prompt of so many tokens (`band_rates`)."""


def attribute(
    pieces: Sequence[Piece],
    usage: Usage,
    cost: Decimal,
    price: Price,
    rates: Rates | None = None,
) -> list[Part]:
    """`cost` (the call's, as charged) split over `pieces` and the answer;
    `rates`, where given, says what `band_rates` would from `price`, faster."""
    input_cost = min(cost, price(_without_output(usage)))
    kept = [p for p in pieces if p.chars > 0]
    answer = Part("output", None, None, 0, cost - input_cost)
    if not kept or not usage.input_tokens:
        # Nothing to share out: an input cost with no prompt seen is the prompt's.
        prompt = Part("prompt", None, None, usage.input_tokens, input_cost)
        return [prompt, answer] if input_cost else [answer]
    tokens, chars = usage.input_tokens, sum(p.chars for p in kept)
    rates_of = rates or (lambda n: band_rates(n, price))
    weights, counts = _weigh(kept, tokens, chars, _bands(usage, rates_of, chars))
    return [*_shared(kept, weights, counts, input_cost), answer]


def _written_chars(tool: ToolSpec) -> int:
    return len(json.dumps(tool.parameters)) + len(tool.name) + len(tool.description)


_schema_chars = OncePerObject(_written_chars)
_schemas_chars: OncePerObject[tuple[ToolSpec, ...], int] = OncePerObject(
    lambda tools: sum(map(_schema_chars, tools))
)
"""A tool's schema's characters, once a tool (`plane.providers.once`)."""

HistoryPieces = tuple[tuple[Piece, ...], Piece]
"""A history's pieces: the runs closed, and the run still open."""
NO_HISTORY: HistoryPieces = ((), Piece("messages", 0))


def of_request(request: CompletionRequest, history: HistoryPieces | None = None) -> list[Piece]:
    """The plane's own request, as pieces: the system prompt and tool
    schemas, then its history, each run of messages of one kind (people's
    and the model's words; one tool's results) one piece. A run read as one
    piece gets the same tokens and the same rates as its messages one by one
    (each piece's tokens and weight are those of its span of the prompt), and
    its share is rounded once, not once a message: a long history of short
    messages made hundreds of pieces a call, each its own division.
    `history`: `add_message` folded over its messages already, where kept."""
    if history is None:
        history = NO_HISTORY
        for message in request.messages:
            history = add_message(history, message)
    schemas = _schemas_chars(request.tools)
    return [Piece("prompt", len(request.system) + schemas), *history[0], history[1]]


def add_message(history: HistoryPieces, message: ChatMessage) -> HistoryPieces:
    """`history`'s pieces with `message` after them."""
    closed, run = history
    if message.role == "tool":
        if run.part == "tool" and run.tool == message.tool and run.mcp_server == message.mcp_server:
            return closed, Piece("tool", run.chars + len(message.content), run.tool, run.mcp_server)
        return (*closed, run), Piece("tool", len(message.content), message.tool, message.mcp_server)
    chars = len(message.content)
    for call in message.tool_calls:
        chars += len(call.name) + len(call.arguments)
    if run.part == "messages":
        return closed, Piece("messages", run.chars + chars)
    return (*closed, run), Piece("messages", chars)


def _without_output(usage: Usage) -> Usage:
    return Usage(
        input_tokens=usage.input_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cache_write_1h_tokens=usage.cache_write_1h_tokens,
        input_audio_tokens=usage.input_audio_tokens,
    )


def _bands(usage: Usage, rates_of: Rates, scale: int) -> list[tuple[int, int, int]]:
    """The prompt's tokens by how they were billed, oldest first (read from
    the cache, written for an hour, written for five minutes, uncached): each
    band's edges in the pieces' units (`scale` of them a token) and its price
    a token as a whole number, all the bands' prices over one denominator."""
    n = usage.input_tokens
    read = min(usage.cache_read_tokens, n)
    written = min(usage.cache_write_tokens, n - read)
    hour = min(usage.cache_write_1h_tokens, written)
    rates = rates_of(n)
    edges = [
        ("read", read),
        ("hour", hour),
        ("write", written - hour),
        ("fresh", n - written - read),
    ]
    denominator = math.lcm(*(rate.denominator for rate in rates.values()))
    bands, at = [], 0
    for name, count in edges:
        rate = rates[name]
        bands.append(
            (at * scale, (at + count) * scale, rate.numerator * (denominator // rate.denominator))
        )
        at += count
    return bands


def band_rates(n: int, price: Price) -> dict[str, Fraction]:
    """Each band's price per token, at this call's size (a table whose
    rates change past a number of tokens prices each band as this call)."""
    return {
        "fresh": Fraction(price(Usage(input_tokens=n)) / n),
        "read": Fraction(price(Usage(input_tokens=n, cache_read_tokens=n)) / n),
        "write": Fraction(price(Usage(input_tokens=n, cache_write_tokens=n)) / n),
        "hour": Fraction(
            price(Usage(input_tokens=n, cache_write_tokens=n, cache_write_1h_tokens=n)) / n
        ),
    }


def _weigh(
    pieces: Sequence[Piece], tokens: int, chars: int, bands: Sequence[tuple[int, int, int]]
) -> tuple[list[int], list[int]]:
    """What each piece's tokens cost at the rates each was billed, all in
    one unit (whole numbers: the shares need only their proportions); and
    each piece's tokens as whole numbers that add up to the prompt's (each
    edge rounded to the nearest token, half to even). A piece's edges are
    kept in units of 1/`chars` of a token, so every edge is a whole number;
    the bands are met in order, and most pieces lie within one."""
    weights, counts = [], []
    at = start = before = band = 0
    last = len(bands) - 1
    for piece in pieces:
        at += piece.chars
        end = tokens * at
        while band < last and bands[band][1] <= start:
            band += 1
        _, high, rate = bands[band]
        if end <= high:
            weights.append((end - start) * rate)
        else:
            weights.append(
                sum(
                    (min(end, top) - max(start, bottom)) * each
                    for bottom, top, each in bands
                    if min(end, top) > max(start, bottom)
                )
            )
        edge, rest = divmod(end, chars)
        if 2 * rest > chars or (2 * rest == chars and edge % 2):
            edge += 1
        counts.append(edge - before)
        before, start = edge, end
    counts[-1] += tokens - before
    return weights, counts


def _shared(
    pieces: Sequence[Piece], weights: list[int], counts: Sequence[int], total: Decimal
) -> list[Part]:
    """`total` split by `weights` by the largest remainder: each piece's
    share the exact quotient rounded down to `SHARE`, the `SHARE`s that
    rounding left over one each to the pieces it cut the most (of equal
    remainders, the first), and what of `total` is finer than a `SHARE` to
    the largest piece (the first of the largest). So the shares add up to
    `total` exactly and none is below zero unless `total` is: many small
    shares rounded up can no longer leave the largest less than nothing.
    Worked out as each share rounded to the nearest `SHARE`, then the few
    that leaves off moved by one (`_most_cut`): the same shares, without
    sorting hundreds of pieces a call. The shares and tokens of the pieces
    of one part, tool and server are added; the shares counted in whole
    `SHARE`s, made Decimals once a part."""
    whole = sum(weights)
    if not whole:
        weights, whole = [1] * len(weights), len(weights)
    numerator, denominator = total.as_integer_ratio()
    below = denominator * whole
    scaled = numerator * ONE_SHARE
    merged: dict[tuple[PartKind, str | None, str | None], list[int]] = {}
    rests, given = [], 0
    for piece, weight, count in zip(pieces, weights, counts, strict=True):
        units, rest = divmod(scaled * weight, below)
        rests.append(rest)
        if 2 * rest > below:  # to the nearest (a half down): few are off after
            units += 1
        given += units
        key = (piece.part, piece.tool, piece.mcp_server)
        held = merged.get(key)
        if held is None:
            merged[key] = [count, units]
        else:
            held[0] += count
            held[1] += units
    in_shares = scaled // denominator  # `total` in whole SHAREs, rounded down
    off = in_shares - given
    if off:
        for at in _most_cut(rests, below, off):
            piece = pieces[at]
            merged[(piece.part, piece.tool, piece.mcp_server)][1] += 1 if off > 0 else -1
    parts = {key: (count, Decimal(units).scaleb(SCALE)) for key, (count, units) in merged.items()}
    finer = total - Decimal(in_shares).scaleb(SCALE)  # zero, or under a SHARE
    largest = pieces[weights.index(max(weights))]  # the first of the largest
    key = (largest.part, largest.tool, largest.mcp_server)
    parts[key] = (parts[key][0], parts[key][1] + finer)
    return [Part(*key, count, share) for key, (count, share) in parts.items()]


def _most_cut(rests: Sequence[int], below: int, off: int) -> list[int]:
    """The pieces whose shares, each rounded to the nearest `SHARE`, change
    by one so that the shares are the largest remainder's: with `off` more
    to give, the `off` rounded down that rounding cut the most (of equal
    remainders, the first); with `off` too many given, the `-off` rounded up
    it raised the most (of equal remainders, the last)."""
    if off > 0:
        down = [at for at, rest in enumerate(rests) if 2 * rest <= below]
        return heapq.nsmallest(off, down, key=lambda at: (-rests[at], at))
    up = [at for at, rest in enumerate(rests) if 2 * rest > below]
    return heapq.nsmallest(-off, up, key=lambda at: (rests[at], -at))
