"""Dollars and tokens as the conversation writes them.

Money is `Decimal` from the price table to the screen; these are the only
places a figure is rounded, and only for display.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from plane.protocol import Usage

CENT = Decimal("0.01")


def usd(amount: Decimal) -> str:
    """`$4.10`; amounts under a cent that are not zero show as `<$0.01`, so
    spend that exists never reads as nothing."""
    if Decimal(0) < amount < Decimal("0.005"):
        return "<$0.01"
    return f"${amount.quantize(CENT, rounding=ROUND_HALF_UP):,.2f}"


def usd_exact(amount: Decimal) -> str:
    """Cents always (for settings: `$5.00 a day`)."""
    return f"${amount.quantize(CENT, rounding=ROUND_HALF_UP):,.2f}"


def plain(amount: Decimal) -> str:
    """Exact, without trailing zeros or exponent (`0.12`, `5`): for machine
    output, where a figure must read back as the same Decimal."""
    return format(amount.normalize(), "f")


def tokens(count: int) -> str:
    """`320`, `12.4k`, `1.2M`."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k".replace(".0k", "k")
    return f"{count / 1_000_000:.1f}M".replace(".0M", "M")


def turn_line(cost: Decimal, usage: Usage, saved_chars: int = 0) -> str:
    """The quiet line after a turn: `$0.03 · 12.4k in (11.9k cached) · 320 out`."""
    cached = f" ({tokens(usage.cache_read_tokens)} cached)" if usage.cache_read_tokens else ""
    tokens_in, tokens_out = tokens(usage.input_tokens), tokens(usage.output_tokens)
    line = f"{usd(cost)} · {tokens_in} in{cached} · {tokens_out} out"
    if saved_chars:
        line += f" · compression saved {tokens(saved_chars)} chars"
    return line
