"""Cost by tool: each call's cost split over its prompt's pieces and its
answer. The split adds up to what the call was charged, exactly, whatever
the prices, the cache and the pieces; and `plane ledger --summary --by tool`
adds up to the ledger's total."""

import json
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from plane.config import Price
from plane.money.attribution import Piece, attribute
from plane.money.pricing import override_cost
from plane.wire.protocol import Usage
from tests.plane.money import strategies
from tests.plane.money.strategies import usages
from tests.support.command import plane_cli_async
from tests.support.fixtures_examples import examples
from tests.support.fixtures_plane import CONFIG

PRICE = Price(
    input=Decimal(3), cached_input=Decimal("0.3"), cache_write=Decimal("3.75"),
    cache_write_1h=Decimal(6), output=Decimal(15),
)  # fmt: skip


def price(usage: Usage) -> Decimal:
    return override_cost(PRICE, usage)


pieces = strategies.pieces(200_000, 40)


@settings(max_examples=examples(400), deadline=None)
@given(pieces, usages(), st.integers(0, 50))
def test_the_parts_add_up_to_the_call_and_the_input_parts_to_its_input(pieces, usage, searches):
    """To the last digit, not only to the cent: the input's shares add up to
    the input's cost, and with the answer's part to what the call was charged."""
    cost = price(usage) + Decimal(searches) / 100  # web searches: the answer's
    parts = attribute(pieces, usage, cost, price)
    assert sum(part.cost_usd for part in parts) == cost
    input_cost = price(usage.model_copy(update={"output_tokens": 0}))
    assert sum(p.cost_usd for p in parts if p.part != "output") == input_cost
    assert [p.cost_usd for p in parts if p.part == "output"] == [cost - input_cost]
    assert sum(p.input_tokens for p in parts) == usage.input_tokens
    assert all(p.cost_usd >= 0 for p in parts)


def test_the_cached_prefix_is_the_oldest_part_of_the_prompt():
    """A result early in the session is billed at the cache-read rate; the
    one that just arrived, at the full rate: ten times as dear a token."""
    usage = Usage(input_tokens=20_000, cache_read_tokens=10_000)
    pieces = [
        Piece("prompt", 2_000),
        Piece("tool", 8_000, "grep"),
        Piece("tool", 10_000, "read_file"),
    ]
    parts = {p.tool or p.part: p for p in attribute(pieces, usage, price(usage), price)}
    assert parts["grep"].input_tokens == parts["read_file"].input_tokens * 8 / 10
    assert parts["grep"].cost_usd == Decimal("8000") * Decimal("0.3") / 1_000_000
    assert parts["read_file"].cost_usd == Decimal("10000") * Decimal(3) / 1_000_000
    assert parts["prompt"].cost_usd == Decimal("2000") * Decimal("0.3") / 1_000_000


def test_an_mcp_tools_results_are_its_servers():
    parts = attribute(
        [Piece("prompt", 10), Piece("tool", 90, "notes.search", "notes")],
        Usage(input_tokens=100),
        price(Usage(input_tokens=100)),
        price,
    )
    assert [(p.part, p.tool, p.mcp_server) for p in parts] == [
        ("prompt", None, None),
        ("tool", "notes.search", "notes"),
        ("output", None, None),
    ]


CACHED = Usage(input_tokens=4_000, cache_read_tokens=3_000, output_tokens=40)


async def test_a_plane_turn_is_attributed_by_tool_and_the_summary_reconciles(start_plane):
    """A real turn with two tools on the scripted model: `--by tool` names
    each tool, and its lines add up to `--by agent`'s total, exactly."""
    config = CONFIG.replace("  demo: {}\n", "  demo: {limitUsd: 1}\n")
    plane = await start_plane(config)
    llm = plane.llm
    llm.reply("", tool_calls=[("run_command", {"command": "seq 1 2000"})], usage=CACHED)
    llm.reply("", tool_calls=[("list_files", {"path": "."})], usage=CACHED)
    llm.reply("done", usage=CACHED)
    await plane.turn("demo", "count, then look")
    rows = await plane.db.fetchall(
        "SELECT part, tool, cost_usd FROM call_parts ORDER BY call, rowid"
    )
    tools = {row["tool"] for row in rows if row["part"] == "tool"}
    assert tools == {"run_command", "list_files"}
    day = plane.clock.now().date().isoformat()  # the plane's day, not this machine's
    summary = ("ledger", "--summary", "--day", day, "--json")
    by_tool = json.loads((await plane_cli_async(plane.home.root, *summary, "--by", "tool")).stdout)
    by_agent = json.loads((await plane_cli_async(plane.home.root, *summary)).stdout)
    keys = [g["tool"] for g in by_tool["groups"]]
    assert {"run_command", "list_files", "(prompt)", "(messages)", "(answers)"} <= set(keys)
    assert sum(Decimal(g["cost_usd"]) for g in by_tool["groups"]) == Decimal(
        by_agent["total"]["cost_usd"]
    )
    assert by_tool["total"] == by_agent["total"]


async def test_the_answers_line_counts_the_output_tokens_of_the_answers(start_plane):
    """`(answers)` is what the model wrote: its line says those tokens, as
    `--by agent` does, not `0 out` beside what they cost."""
    config = CONFIG.replace("  demo: {}\n", "  demo: {limitUsd: 1}\n")
    plane = await start_plane(config)
    plane.llm.reply("", tool_calls=[("list_files", {"path": "."})], usage=CACHED)
    plane.llm.reply("done", usage=CACHED)
    await plane.turn("demo", "look")
    day = plane.clock.now().date().isoformat()
    summary = ("ledger", "--summary", "--day", day)
    by_tool = json.loads(
        (await plane_cli_async(plane.home.root, *summary, "--by", "tool", "--json")).stdout
    )
    answers = next(g for g in by_tool["groups"] if g["tool"] == "(answers)")
    assert answers["output_tokens"] == 2 * CACHED.output_tokens == by_tool["total"]["output_tokens"]
    printed = (await plane_cli_async(plane.home.root, *summary, "--by", "tool")).stdout
    line = next(line for line in printed.splitlines() if "(answers)" in line)
    assert line.endswith(f"0 in · {2 * CACHED.output_tokens} out"), line


@st.composite
def small_calls(draw: st.DrawFn) -> tuple[list[Piece], Decimal]:
    """Pieces each its own part, many of the same size (shares alike, rounded
    alike), and a cost of a few trillionths of a dollar a piece: where each
    share rounded up could give away more than the call cost."""
    count = draw(st.integers(2, 300))
    sizes = draw(st.lists(st.integers(1, 3), min_size=count, max_size=count))
    cost = Decimal(draw(st.integers(count // 2, count))).scaleb(-12)
    return [Piece("tool", n, f"tool_{at}") for at, n in enumerate(sizes)], cost


any_calls = st.tuples(pieces, st.decimals(0, 1_000, places=15))
"""Any pieces, any cost to 15 places."""


@settings(max_examples=examples(200), deadline=None)
@given(small_calls() | any_calls, usages())
def test_no_part_is_below_zero_and_the_parts_add_up_whatever_the_cost(call, usage):
    """However many pieces share however small a cost, at whatever rates:
    each part is zero or more, and they add up to the cost to the last digit."""
    pieces, cost = call
    parts = attribute(pieces, usage, cost, price)
    assert all(part.cost_usd >= 0 for part in parts), parts
    assert sum(part.cost_usd for part in parts) == cost


def test_five_trillionths_of_a_dollar_over_eight_equal_pieces_go_to_the_first_five():
    """Each piece's exact share is 0.625 of a trillionth. Rounded up, they
    gave away eight trillionths and left the largest at minus two; rounded
    down to nothing, the five trillionths left go one each, in order (the
    remainders are equal)."""
    pieces = [Piece("tool", 1_000, f"tool_{at}") for at in range(8)]
    cost = Decimal("5e-12")
    parts = attribute(pieces, Usage(input_tokens=8_000), cost, price)
    assert [(part.tool, part.cost_usd) for part in parts] == [
        *((f"tool_{at}", Decimal("1e-12")) for at in range(5)),
        *((f"tool_{at}", Decimal(0)) for at in range(5, 8)),
        (None, Decimal(0)),
    ]
    assert sum(part.cost_usd for part in parts) == cost
