"""Prices against figures worked by hand from the providers' published price
lists (USD per 1M tokens):

    model               input   cache read   cache write (5 min)   output
    gpt-4o               2.50      1.25            —                10.00
    gpt-5                1.25      0.125           —                10.00
    claude-sonnet-4-5    3.00      0.30           3.75              15.00   (≤ 200k input)
                         6.00      0.60           7.50              22.50   (> 200k input)
    claude-haiku-4-5     1.00      0.10           1.25               5.00
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import genai_prices
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plane.config import Price
from plane.errors import UnknownPrice
from plane.money.pricing import Pricer
from plane.providers.anthropic import anthropic_usage
from plane.providers.openai import openai_usage
from plane.wire.protocol import Usage
from tests.support.fixtures_examples import examples

# 10k prompt tokens: 5k read from the cache, 4k written to it, 1k neither; 500 out.
CACHED = Usage(
    input_tokens=10_000, cache_read_tokens=5_000, cache_write_tokens=4_000, output_tokens=500
)
pricer = Pricer({})


@pytest.mark.parametrize(
    ("model", "usage", "dollars"),
    [
        # 2,000 × 2.50 + 8,000 × 1.25 + 500 × 10 = 20,000 per 1M
        ("gpt-4o", Usage(input_tokens=10_000, cache_read_tokens=8_000, output_tokens=500), "0.02"),
        # 2,000 × 1.25 + 8,000 × 0.125 + 500 × 10 = 8,500 per 1M
        ("gpt-5", Usage(input_tokens=10_000, cache_read_tokens=8_000, output_tokens=500), "0.0085"),
        # 1,000 × 3 + 5,000 × 0.30 + 4,000 × 3.75 + 500 × 15 = 27,000 per 1M
        ("claude-sonnet-4-5", CACHED, "0.027"),
        # 1,000 × 1 + 5,000 × 0.10 + 4,000 × 1.25 + 500 × 5 = 9,000 per 1M
        ("claude-haiku-4-5", CACHED, "0.009"),
        # over 200k input, every token at the higher tier:
        # 150,000 × 6 + 100,000 × 0.60 + 50,000 × 7.50 + 1,000 × 22.50 = 1,357,500 per 1M
        (
            "claude-sonnet-4-5",
            Usage(
                input_tokens=300_000,
                cache_read_tokens=100_000,
                cache_write_tokens=50_000,
                output_tokens=1_000,
            ),
            "1.3575",
        ),
    ],
)
def test_genai_prices_figures(model: str, usage: Usage, dollars: str):
    priced = pricer.price(model, usage)
    assert priced.cost_usd == Decimal(dollars)
    assert isinstance(priced.cost_usd, Decimal)
    assert priced.source.startswith("genai-prices 0.") and model in priced.source


def test_provider_usage_straight_from_the_wire_is_priced_right():
    """Anthropic's input_tokens excludes the cache; OpenAI's includes it. Each
    normalised, the same call costs what the price list says."""
    wire: dict[str, Any] = {
        "input_tokens": 1_000,
        "cache_read_input_tokens": 5_000,
        "cache_creation_input_tokens": 4_000,
        "output_tokens": 500,
    }
    assert pricer.price("claude-haiku-4-5", anthropic_usage(wire)).cost_usd == Decimal("0.009")
    wire = {
        "prompt_tokens": 10_000,
        "completion_tokens": 500,
        "prompt_tokens_details": {"cached_tokens": 8_000},
    }
    assert pricer.price("gpt-4o", openai_usage(wire)).cost_usd == Decimal("0.02")


def test_an_hour_in_anthropics_cache_is_priced_at_the_hour_rate_not_the_five_minute_one():
    """`cache_creation` splits the writes; genai-prices has both rates (haiku
    4.5: $1.25 for 5 minutes, $2 for an hour, per 1M)."""
    wire = {
        "input_tokens": 1_000,
        "cache_read_input_tokens": 5_000,
        "cache_creation_input_tokens": 4_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1_000, "ephemeral_1h_input_tokens": 3_000},
        "output_tokens": 500,
    }
    usage = anthropic_usage(wire)
    assert (usage.cache_write_tokens, usage.cache_write_1h_tokens) == (4_000, 3_000)
    # 1,000 × 1 + 5,000 × 0.1 + 1,000 × 1.25 + 3,000 × 2 + 500 × 5 = 11,250 per 1M
    assert pricer.price("claude-haiku-4-5", usage).cost_usd == Decimal("0.01125")
    price = Price(
        input=Decimal(1), cache_write=Decimal(2), cache_write_1h=Decimal(4), output=Decimal(0)
    )
    # 1,000 × 1 + 5,000 × 1 + 1,000 × 2 + 3,000 × 4 = 20,000 per 1M
    assert Pricer({"m": price}).price("m", usage).cost_usd == Decimal("0.02")
    without = Price(input=Decimal(1), cache_write=Decimal(2), output=Decimal(0))
    assert Pricer({"m": without}).price("m", usage).cost_usd == Decimal("0.014")


def test_audio_read_from_the_cache_is_priced_at_the_dearest_reading_of_the_usage():
    """gpt-realtime: text $4 in, $0.40 from the cache, $16 out; audio $32 in,
    $0.40 from the cache (per 1M). Of 1,000 tokens in, 900 were read from the
    cache and 400 were audio; which of the 400 came from the cache no usage
    says, so as few as can: 300, and 100 audio at $32 ($0.0032), 600 text
    and 300 audio read ($0.00036), 10 out ($0.00016)."""
    usage = Usage(
        input_tokens=1_000, cache_read_tokens=900, input_audio_tokens=400, output_tokens=10
    )
    assert pricer.price("gpt-realtime", usage).cost_usd == Decimal("0.00372")
    # None of it read from the cache: 600 text at $4, 400 audio at $32, 10 out.
    fresh = usage.model_copy(update={"cache_read_tokens": 0})
    assert pricer.price("gpt-realtime", fresh).cost_usd == Decimal("0.01536")


def test_overrides_price_every_kind_of_token():
    price = Price(
        input=Decimal("0.5"),
        cached_input=Decimal("0.05"),
        cache_write=Decimal("0.625"),
        output=Decimal(2),
    )
    priced = Pricer({"house-model": price}).price("house-model-v2", CACHED)
    # 1,000 × 0.5 + 5,000 × 0.05 + 4,000 × 0.625 + 500 × 2 = 4,250 per 1M
    assert priced.cost_usd == Decimal("0.00425")
    assert priced.source == "agents.yaml pricing 'house-model'"


def test_cache_prices_default_to_the_input_price():
    priced = Pricer({"m": Price(input=Decimal(1), output=Decimal(2))}).price("m", CACHED)
    assert priced.cost_usd == Decimal("0.011")  # 10,000 × 1 + 500 × 2


def test_the_longest_matching_key_wins_and_beats_the_table():
    cheap, dear, dearest = (Price(input=Decimal(n), output=Decimal(n)) for n in (1, 2, 3))
    overrides = Pricer({"gpt": cheap, "gpt-4o": dear, "gpt-4o-mini": dearest})
    one_million = Usage(input_tokens=1_000_000)
    assert overrides.price("gpt-4o-mini-2024-07-18", one_million).cost_usd == 3
    assert overrides.price("GPT-4o", one_million).cost_usd == 2
    assert overrides.price("gpt-5", one_million).source == "agents.yaml pricing 'gpt'"


def test_an_explicit_zero_price_is_free_and_says_where_it_came_from():
    priced = Pricer({"smollm2": Price(input=Decimal(0), output=Decimal(0))}).price(
        "smollm2-135m", CACHED
    )
    assert priced.cost_usd == 0 and priced.source == "agents.yaml pricing 'smollm2'"


def test_an_unknown_model_is_never_free():
    assert not pricer.is_known("smollm2-135m")
    with pytest.raises(UnknownPrice, match="smollm2-135m"):
        pricer.price("smollm2-135m", CACHED)
    with pytest.raises(UnknownPrice):
        pricer.estimate("smollm2-135m", 100, 100)
    assert pricer.is_known("claude-haiku-4-5")


def test_openrouter_style_names_are_found():
    usage = Usage(input_tokens=1_000_000)
    assert pricer.price("openai/gpt-4o", usage).cost_usd == Decimal("2.5")


def test_estimate_is_the_dearest_way_the_prompt_could_be_billed():
    # haiku: 1,000 written to the cache at 1.25 (dearer than 1.00) + 100 × 5
    assert pricer.estimate("claude-haiku-4-5", 1_000, 100) == Decimal("0.00175")
    # gpt-4o has no cache-write price: 1,000 × 2.50 + 100 × 10
    assert pricer.estimate("gpt-4o", 1_000, 100) == Decimal("0.0035")
    # a request that asks for the 1-hour cache: 1,000 at 2.00 + 100 × 5
    assert pricer.estimate("claude-haiku-4-5", 1_000, 100, hour_cache=True) == Decimal("0.0025")


@settings(max_examples=examples(60), deadline=None)
@given(
    model=st.sampled_from(["claude-sonnet-4-5", "claude-haiku-4-5", "gpt-5", "override"]),
    prompt=st.integers(0, 400_000),
    read_share=st.floats(0, 1),
    write_share=st.floats(0, 1),
    max_out=st.integers(1, 64_000),
    out_share=st.floats(0, 1),
)
def test_no_call_costs_more_than_its_estimate(
    model: str,
    prompt: int,
    read_share: float,
    write_share: float,
    max_out: int,
    out_share: float,
):
    prices = Pricer(
        {
            "override": Price(
                input=Decimal(3),
                cached_input=Decimal("0.3"),
                cache_write=Decimal("3.75"),
                output=Decimal(15),
            )
        }
    )
    read = int(prompt * read_share)
    written = int((prompt - read) * write_share)
    usage = Usage(
        input_tokens=prompt,
        cache_read_tokens=read,
        cache_write_tokens=written,
        output_tokens=int(max_out * out_share),
    )
    assert prices.price(model, usage).cost_usd <= prices.estimate(model, prompt, max_out)


def test_whether_a_price_is_known_is_looked_up_once_a_model(monkeypatch: pytest.MonkeyPatch):
    """Asked several times a call (the gate, the worker, the meter): the
    genai-prices lookup behind it is not repeated."""
    looked: list[str] = []
    calc_price = genai_prices.calc_price

    def counted(usage, model_ref, **asked):
        looked.append(model_ref)
        return calc_price(usage, model_ref, **asked)

    monkeypatch.setattr(genai_prices, "calc_price", counted)
    pricer = Pricer({})
    assert all(pricer.is_known("gpt-4o") for _ in range(5))
    assert not any(pricer.is_known("no-such-model-anywhere") for _ in range(5))
    assert looked == ["gpt-4o", "no-such-model-anywhere"]
