"""What the property tests of pricing and cost by tool draw: usages a
provider could report (cache reads and writes within the input, the hour's
writes within the writes) and a prompt's pieces."""

from __future__ import annotations

from hypothesis import strategies as st

from plane.money.attribution import Piece
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


def pieces(most_chars: int, most: int, servers: bool = False) -> st.SearchStrategy[list[Piece]]:
    """A prompt's pieces: up to `most`, each up to `most_chars` characters;
    with `servers`, some of them an MCP server's."""
    return st.lists(
        st.builds(
            Piece,
            st.sampled_from(["prompt", "messages", "tool"]),
            st.integers(0, most_chars),
            st.sampled_from([None, "read_file", "grep", "notes.search"]),
            st.sampled_from([None, "notes"]) if servers else st.none(),
        ),
        max_size=most,
    )
