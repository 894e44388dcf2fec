"""Print, as a Markdown table, what the plane charges for one call's usage on a
few real models, next to the per-1M-token prices it came from (read from
genai-prices' bundled table, the same one the plane uses).

    .venv/bin/python bench/prices.py
    .venv/bin/python bench/prices.py --input 50000 --cache-read 40000 gpt-4o
"""

from __future__ import annotations

import argparse
from decimal import Decimal

import genai_prices
from genai_prices.types import TieredPrices

from plane.money.pricing import GENAI_PRICES, Pricer
from plane.wire.protocol import Usage

MODELS = ["gpt-4o", "gpt-5", "claude-sonnet-4-5", "claude-haiku-4-5"]


def per_million(price: Decimal | TieredPrices | None) -> str:
    if price is None:
        return "—"
    if isinstance(price, TieredPrices):
        tiers = ", ".join(f"{plain(t.price)} over {t.start // 1000}k" for t in price.tiers)
        return f"{plain(price.base)} ({tiers})"
    return plain(price)


def plain(value: Decimal) -> str:
    return f"{value.normalize():f}"


def row(pricer: Pricer, model: str, usage: Usage) -> str:
    priced = pricer.price(model, usage)
    table = genai_prices.calc_price(genai_prices.Usage(input_tokens=0), model).model_price
    cells = [
        f"`{model}`",
        per_million(table.input_mtok),
        per_million(table.cache_read_mtok),
        per_million(getattr(table, "cache_write_mtok", None)),
        per_million(table.output_mtok),
        f"**${priced.cost_usd:.6f}**",
    ]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=MODELS)
    parser.add_argument("--input", type=int, default=20_000, help="all prompt tokens")
    parser.add_argument("--cache-read", type=int, default=15_000)
    parser.add_argument("--cache-write", type=int, default=3_000)
    parser.add_argument("--output", type=int, default=800)
    args = parser.parse_args()
    usage = Usage(
        input_tokens=args.input,
        cache_read_tokens=args.cache_read,
        cache_write_tokens=args.cache_write,
        output_tokens=args.output,
    )
    uncached = usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens
    pricer = Pricer({})
    print(
        f"One call: {usage.input_tokens:,} prompt tokens ({usage.cache_read_tokens:,} read "
        f"from the cache, {usage.cache_write_tokens:,} written to it, {uncached:,} neither) "
        f"and {usage.output_tokens:,} output tokens. Prices in USD per 1M tokens, from "
        f"{GENAI_PRICES}.\n"
    )
    print("| model | input | cache read | cache write | output | the plane charges |")
    print("|---|---:|---:|---:|---:|---:|")
    for model in args.models:
        print(row(pricer, model, usage))
    print(
        "\nA model with no cache-write price (OpenAI's cache is automatic and free to "
        "write) is charged the input price for those tokens."
    )


if __name__ == "__main__":
    main()
