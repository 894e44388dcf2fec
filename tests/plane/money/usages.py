"""Usages a provider could report, for the property tests of pricing and
cost by tool: cache reads and writes within the input, the hour's writes
within the writes."""

from __future__ import annotations

from hypothesis import strategies as st

from plane.wire.protocol import Usage

INPUTS = st.integers(0, 2_000_000)


@st.composite
def usages(draw: st.DrawFn, totals: st.SearchStrategy[int] = INPUTS) -> Usage:
    """`totals`: the input tokens drawn (a price's tier edges, say)."""
    total = draw(totals)
    read = draw(st.integers(0, total))
    written = draw(st.integers(0, total - read))
    return Usage(
        input_tokens=total,
        cache_read_tokens=read,
        cache_write_tokens=written,
        cache_write_1h_tokens=draw(st.integers(0, written)),
        output_tokens=draw(st.integers(0, 100_000)),
    )
