"""Cost by tool, computed fast, is the plain rule's to the last digit.

`plane.money.attribution` weighs the pieces in whole numbers and keeps a
model's per-token rates between calls (`Pricer.band_rates`). The plain rule
below is the module's rule written the slow and obvious way: each piece's
span of tokens as fractions, each band's rate priced afresh for every call.
Both must give the same parts, the same tokens and the same Decimal costs,
written the same way (the ledger stores them as text), for every piece, usage
and price: the agents.yaml prices and every model in genai-prices' table,
tiered, dated and cached ones included."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from decimal import Decimal
from fractions import Fraction

import genai_prices
import pytest
from genai_prices.data import providers
from genai_prices.types import ConditionalPrice, TieredPrices
from hypothesis import given, settings
from hypothesis import strategies as st

from plane.config import Price
from plane.errors import UnknownPrice
from plane.money.attribution import Part, Piece, attribute
from plane.money.pricing import Pricer, override_cost
from plane.wire.protocol import Usage
from tests.plane.money import strategies
from tests.plane.money.strategies import usages
from tests.support.fixtures_examples import examples

PriceOf = Callable[[Usage], Decimal]
SHARE = Decimal("1e-12")


def plain(pieces: Sequence[Piece], usage: Usage, cost: Decimal, price: PriceOf) -> list[Part]:
    """The rule, the obvious way."""
    input_cost = min(cost, price(usage.model_copy(update={"output_tokens": 0})))
    kept = [p for p in pieces if p.chars > 0]
    answer = Part("output", None, None, 0, cost - input_cost)
    if not kept or not usage.input_tokens:
        prompt = Part("prompt", None, None, usage.input_tokens, input_cost)
        return [prompt, answer] if input_cost else [answer]
    n, chars = usage.input_tokens, sum(p.chars for p in kept)
    spans, at = [], 0
    for piece in kept:
        start = Fraction(n * at, chars)
        at += piece.chars
        spans.append((start, Fraction(n * at, chars)))
    read = min(usage.cache_read_tokens, n)
    written = min(usage.cache_write_tokens, n - read)
    hour = min(usage.cache_write_1h_tokens, written)
    bands = [("read", 0, read), ("hour", read, read + hour), ("write", read + hour, read + written)]
    bands.append(("fresh", read + written, n))
    rates = {
        "fresh": price(Usage(input_tokens=n)) / n,
        "read": price(Usage(input_tokens=n, cache_read_tokens=n)) / n,
        "write": price(Usage(input_tokens=n, cache_write_tokens=n)) / n,
        "hour": price(Usage(input_tokens=n, cache_write_tokens=n, cache_write_1h_tokens=n)) / n,
    }
    weights = []
    for start, end in spans:
        weight = Fraction(0)
        for band, low, high in bands:
            overlap = min(end, Fraction(high)) - max(start, Fraction(low))
            if overlap > 0:
                weight += overlap * Fraction(rates[band])
        weights.append(weight)
    whole = sum(weights, Fraction(0))
    if not whole:
        weights, whole = [Fraction(1)] * len(weights), Fraction(len(weights))
    exact = [Fraction(input_cost) * w / whole / Fraction(SHARE) for w in weights]
    units = [math.floor(share) for share in exact]
    left = math.floor(Fraction(input_cost) / Fraction(SHARE)) - sum(units)
    most_cut = sorted(range(len(units)), key=lambda i: units[i] - exact[i])  # stable: by order
    for i in most_cut[:left]:
        units[i] += 1
    shares = [Decimal(u) * SHARE for u in units]
    largest = max(range(len(shares)), key=lambda i: weights[i])
    shares[largest] += input_cost - sum(shares, Decimal(0))
    counts, before = [], 0
    for _, end in spans:
        counts.append(round(end) - before)
        before = round(end)
    counts[-1] += n - before
    merged: dict[tuple[str, str | None, str | None], Part] = {}
    for piece, share, count in zip(kept, shares, counts, strict=True):
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


def written(parts: Sequence[Part]) -> list[tuple[object, ...]]:
    """Parts as the ledger keeps them: the costs as text."""
    return [(p.part, p.tool, p.mcp_server, p.input_tokens, str(p.cost_usd)) for p in parts]


pieces = strategies.pieces(300_000, 60, servers=True)
TIER_EDGES = [0, 1, 127_999, 128_000, 128_001, 199_999, 200_000, 200_001, 272_000, 1_000_000]
TIERED = st.sampled_from(TIER_EDGES) | st.integers(0, 2_000_000)


prices = st.builds(
    Price,
    input=st.decimals("0", "100", places=4),
    output=st.decimals("0", "100", places=4),
    cached_input=st.none() | st.decimals("0", "100", places=4),
    cache_write=st.none() | st.decimals("0", "100", places=4),
    cache_write_1h=st.none() | st.decimals("0", "100", places=4),
)


@settings(max_examples=examples(600), deadline=None)
@given(pieces, st.lists(usages(TIERED), min_size=1, max_size=4), prices, st.integers(0, 30))
def test_an_agents_yaml_price_splits_as_the_plain_rule_does(pieces, calls, price, searches):
    """The same pricer across several calls, its rates kept between them;
    and with no pricer, each call's rates priced afresh."""
    pricer = Pricer({"model": price})
    for usage in calls:
        cost = override_cost(price, usage) + Decimal(searches) / 100
        slow = written(plain(pieces, usage, cost, lambda u: override_cost(price, u)))
        assert written(pricer.attribute("my-model", pieces, usage, cost)) == slow
        assert written(attribute(pieces, usage, cost, lambda u: override_cost(price, u))) == slow


def table_models() -> list[str]:
    """Every model genai-prices prices by the token, by its own name."""
    names = sorted({model.id for provider in providers for model in provider.models})
    return [name for name in names if Pricer({}).is_known(name)]


def tiered_models() -> set[str]:
    """The models with a rate that changes past a prompt size, under any
    provider or date (most have none: one rate whatever the size)."""
    return {
        model.id
        for provider in providers
        for model in provider.models
        if any(
            isinstance(rate, TieredPrices)
            for when in (model.prices if isinstance(model.prices, list) else [model.prices])
            for rate in vars(when.prices if isinstance(when, ConditionalPrice) else when).values()
        )
    }


def priced(pricer: Pricer, model: str, usage: Usage) -> Decimal | None:
    try:
        return pricer.price(model, usage).cost_usd
    except (UnknownPrice, ValueError):  # a table that cannot price this usage
        return None


@pytest.mark.slow
def test_every_model_in_the_table_splits_as_the_plain_rule_does():
    """Every model, on one pricer, at prompts on both sides of every common
    tier's start: its rates kept from the first call are right for the rest.
    A model with one rate whatever the size has no tier's start to cross: it
    is checked small, mid-sized and past a million tokens (at every size,
    the same arithmetic again: 28 CPU-seconds, a twentieth of the suite's)."""
    sizes = [1_000, 127_000, 128_500, 190_000, 210_000, 250_000, 300_000, 1_100_000]
    flat = [1_000, 210_000, 1_100_000]
    layout = [Piece("prompt", 900), Piece("messages", 5_000), Piece("tool", 70_001, "grep")]
    checked = 0
    pricer = Pricer({})
    tiered = tiered_models()
    assert 50 < len(tiered) < len(table_models()), "the table has both kinds"
    for model in table_models():
        for n in sizes if model in tiered else flat:
            usage = Usage(
                input_tokens=n,
                cache_read_tokens=n // 2,
                cache_write_tokens=n // 5,
                cache_write_1h_tokens=n // 11,
                output_tokens=3_001,
            )
            if (cost := priced(pricer, model, usage)) is None:
                continue
            fast = pricer.attribute(model, layout, usage, cost)
            slow = plain(layout, usage, cost, functools.partial(cost_of, pricer, model))
            assert written(fast) == written(slow), (model, n)
            checked += 1
    assert checked > 3_000


def cost_of(pricer: Pricer, model: str, usage: Usage) -> Decimal:
    return pricer.price(model, usage).cost_usd


MODELS = [
    "gpt-4o",
    "gpt-5",
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
    "gemini-2.5-pro",
    "deepseek-chat",
    "openai/gpt-4o",
]


@settings(max_examples=examples(200), deadline=None)
@given(pieces, st.lists(st.tuples(st.sampled_from(MODELS), usages(TIERED)), min_size=1, max_size=6))
def test_a_table_price_splits_as_the_plain_rule_does(pieces, calls):
    """Tiered (Gemini, Sonnet past 200k), by time of day (DeepSeek) and
    OpenRouter's names, calls of several models on one pricer."""
    pricer = Pricer({})
    for model, usage in calls:
        if (cost := priced(pricer, model, usage)) is None:
            continue
        fast = pricer.attribute(model, pieces, usage, cost)
        slow = plain(pieces, usage, cost, functools.partial(cost_of, pricer, model))
        assert written(fast) == written(slow)


def test_a_models_rates_are_priced_once_not_every_call(monkeypatch: pytest.MonkeyPatch):
    """Twenty calls of one model of different sizes: genai-prices prices
    each call's input once, and the four rates once for them all."""
    calls: list[str] = []
    calc = genai_prices.calc_price

    def counted(*args, **kwargs):
        calls.append(args[1])
        return calc(*args, **kwargs)

    monkeypatch.setattr(genai_prices, "calc_price", counted)
    pricer = Pricer({})
    pieces = [Piece("prompt", 1_000), Piece("tool", 3_000, "grep")]
    for n in range(1_000, 21_000, 1_000):
        pricer.attribute("gpt-4o", pieces, Usage(input_tokens=n, output_tokens=10), Decimal("0.5"))
    assert len(calls) == 20 + 4


@pytest.mark.parametrize(
    ("chars", "cost"),
    [
        (
            (5 * 10**28 - 1, 5 * 10**28 + 1),
            "0.000000000003",
        ),  # 1.5 less a hair and more: 1 and 2
        ((5 * 10**28 + 1, 5 * 10**28 - 1), "0.000000000003"),
        ((1, 1), "0.000000000003"),  # exactly half each: the one left, the first's
        ((1, 1), "0.000000000001"),
        ((10**9, 10**9 + 1), "0.000000000001"),  # within a hair of a half, not at it
        ((3, 7, 11), "123456789.123456789012345"),  # past $10^8 a share
        ((3, 7, 11), "99999999999999.999999999999"),
    ],
)
def test_shares_at_a_half_and_past_the_hundred_million_round_as_the_plain_rule(chars, cost):
    """Where Decimal's 28 digits would make a tie of a share a hair off a
    half, at a half, and past $10^8 a share: each is the exact quotient
    rounded down, and the trillionths left go as the plain rule gives them."""
    price = Price(input=Decimal(1), output=Decimal(1))
    pieces = [Piece("messages" if n % 2 else "tool", c, "grep") for n, c in enumerate(chars)]
    usage = Usage(input_tokens=1_000)
    total = Decimal(cost)
    fast = attribute(pieces, usage, total, lambda u: total + override_cost(price, u))
    slow = plain(pieces, usage, total, lambda u: total + override_cost(price, u))
    assert written(fast) == written(slow)
