from datetime import timedelta
from decimal import Decimal

from plane.wire.protocol import Usage
from plane.wire.words import turn_line
from tests.tui.factories import agent
from tui.formatting import duration, spend_level, tokens, turn_cost, usd


def test_dollars_never_round_a_real_spend_to_zero() -> None:
    assert usd(Decimal("4.1")) == "$4.10"
    assert usd(Decimal("0.004")) == "<$0.01"
    assert usd(Decimal("0.005")) == "$0.01"
    assert usd(Decimal("1234.5")) == "$1,234.50"


def test_turn_cost_shows_fractions_of_a_cent() -> None:
    assert turn_cost(Decimal("0.00042")) == "$0.0004"
    assert turn_cost(Decimal("0.03")) == "$0.03"


def test_tokens_and_the_turns_cost_line() -> None:
    assert [tokens(n) for n in (320, 1000, 12_400, 2_000_000)] == ["320", "1k", "12.4k", "2M"]
    usage = Usage(input_tokens=12_400, cache_read_tokens=11_900, output_tokens=320)
    assert turn_line(Decimal("0.03"), usage) == "$0.03 · 12.4k in (11.9k cached) · 320 out"
    assert turn_line(Decimal("0.03"), Usage(input_tokens=5, output_tokens=1)) == (
        "$0.03 · 5 in · 1 out"
    )


def test_countdown() -> None:
    assert duration(timedelta(hours=3, minutes=12, seconds=5)) == "3h 12m"
    assert duration(timedelta(minutes=12)) == "12m"
    assert duration(timedelta(seconds=40)) == "40s"
    assert duration(timedelta(seconds=-3)) == "0s"


def test_the_spend_level_is_the_one_the_plane_sent() -> None:
    said = agent("a", "0.01", "5").model_copy(update={"spend_level": "warn"})
    assert spend_level(said) == "warn"  # not recomputed from the figures
    assert spend_level(agent("a", "5.00", "5")) == "over"


def test_a_turn_with_unpriced_calls_never_reads_as_free() -> None:
    used = Usage(input_tokens=81, output_tokens=27)
    assert turn_line(Decimal(0), used, unpriced=True) == "unpriced · 81 in · 27 out"
    assert turn_line(Decimal("0.03"), used, unpriced=True) == "$0.03 + unpriced · 81 in · 27 out"
    assert turn_line(Decimal("0.03"), used) == "$0.03 · 81 in · 27 out"


def test_a_row_on_a_model_with_no_price_never_reads_as_free() -> None:
    from tui.widgets.agent_list import row_text

    assert row_text(agent("demo", "0"), 26)[2] == ""  # nothing at $0, priced
    assert row_text(agent("demo", "0", None, price_known=False), 26)[2] == "$?"
    assert row_text(agent("demo", "0.42", None, price_known=False), 26)[2] == "$0.42+$?"
