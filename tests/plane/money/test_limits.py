"""/limit values and words: the product's voice, character for character."""

from decimal import Decimal
from functools import partial

import pytest

from plane.money.limits import (
    BadLimit,
    Priced,
    is_tighter,
    parse_fleet_limit,
    parse_group_limit,
    parse_limit,
    parse_limit_field,
    refusal,
    set_reply,
    spend_level,
    standing,
)


@pytest.mark.parametrize(
    ("raw", "usd"),
    [
        ("5", "5"),
        ("$5", "5"),
        ("5.00", "5"),
        ("$0.25", "0.25"),
        ("0", "0"),
        ("OFF", None),
        (" 7.5 ", "7.5"),
        ("$.50", "0.5"),
        ("-0", "0"),  # a negative zero is zero: a real ceiling of zero, a pause
        ("-0.00", "0"),
        ("$-0", "0"),
        ("-$0.0", "0"),
    ],
)
def test_values_that_set_a_limit(raw, usd):
    value = parse_limit(raw).usd
    assert value == (None if usd is None else Decimal(usd))
    assert value is None or not value.is_signed(), "never said `$-0.00`"


@pytest.mark.parametrize(
    "raw",
    [
        "-1",
        "$-1",
        "-0.01",
        "-0.001",
        "--0",
        "-abc",
        "abc",
        "nan",
        "inf",
        "1e400",
        "$",
        "",
        "0.125",
        "5,00",
        "2000000",
        "1 2",
    ],
)
def test_bad_values_get_one_line(raw):
    with pytest.raises(BadLimit) as caught:
        parse_limit(raw)
    assert "\n" not in str(caught.value) and str(caught.value)


TO_TYPE = {
    "too many decimals": (
        parse_limit,
        "0.001",
        "0.001 has more than two decimals; a limit is in dollars and cents. "
        "Use /limit 5, /limit $0.25 or /limit off.",
    ),
    "too many decimals, the fleet's": (
        parse_fleet_limit,
        "$4.999",
        " Use /limit fleet 5, /limit fleet $0.25 or /limit fleet off.",
    ),
    "too many decimals, a group's": (
        partial(parse_group_limit, "research"),
        ".125",
        " or /limit group research off.",
    ),
    "over the largest": (
        parse_limit,
        "2000000",
        "2000000 is more than the largest limit, $1,000,000.00 a day. "
        "Use /limit 5, /limit $0.25 or /limit off.",
    ),
    "over the largest, the fleet's": (
        parse_fleet_limit,
        "$1000000.01",
        " a day. Use /limit fleet 5, /limit fleet $0.25 or /limit fleet off.",
    ),
    "over the largest, a group's": (
        partial(parse_group_limit, "research"),
        "9999999",
        " a day. Use /limit group research 5, /limit group research $0.25 "
        "or /limit group research off.",
    ),
}
"""A bad value, and how its reply ends: with something to type, in the form it was typed in."""


@pytest.mark.parametrize(("parse", "raw", "ending"), TO_TYPE.values(), ids=TO_TYPE.keys())
def test_a_bad_value_gets_an_example_to_type_in_its_own_form(parse, raw, ending):
    """`/limit 0.001` and `/limit 2000000` said only what was wrong: now what to type too."""
    with pytest.raises(BadLimit) as caught:
        parse(raw)
    assert str(caught.value).endswith(ending), str(caught.value)


def test_a_limit_of_its_own_says_what_to_type_without_saying_a_limit_is_twice():
    """The edit form and `plane edit --limit` read `… a limit is in dollars
    and cents. A limit is 5, $0.25 or off.`: the example names no command."""
    with pytest.raises(BadLimit) as caught:
        parse_limit_field("0.001")
    assert str(caught.value) == (
        "0.001 has more than two decimals; a limit is in dollars and cents. Use 5, $0.25 or off."
    )
    with pytest.raises(BadLimit) as caught:
        parse_limit_field("lots")
    assert str(caught.value) == "lots is not an amount. Use 5, $0.25 or off."


def test_the_exact_replies():
    spent = Decimal("0.42")
    assert standing(spent, None) == "$0.42 spent today, against no limit."
    assert set_reply(spent, Decimal(5)) == (
        "Spending limit set to $5.00 a day. $0.42 spent today, of $5.00 a day."
    )
    assert set_reply(spent, None) == "Spending limit removed. $0.42 spent today, against no limit."
    assert refusal(Decimal(50), Decimal(5)) == (
        "This agent asked for a ceiling of $50.00 a day, which is above the $5.00 it has. "
        "It can ask to be held to less, never to more: /limit $50.00, if you meant it."
    )


def test_tighter_means_less_capacity_or_equal():
    assert is_tighter(Decimal(1), Decimal(5))
    assert is_tighter(Decimal(5), Decimal(5))
    assert is_tighter(Decimal(9), None)
    assert not is_tighter(Decimal(6), Decimal(5))
    assert not is_tighter(None, Decimal(5))
    assert is_tighter(None, None)


@pytest.mark.parametrize(
    ("spent", "ceiling", "ratio", "level"),
    [
        ("3.99", "5", 0.8, "ok"),
        ("4.00", "5", 0.8, "warn"),  # 0.8 x 5
        ("5.00", "5", 0.8, "over"),
        ("9", None, 0.8, "ok"),
        ("0", "0", 0.8, "over"),  # a ceiling of zero is a pause
        ("0.5", "1", 0.5, "warn"),
    ],
)
def test_spend_level_is_decided_once_here(spent, ceiling, ratio, level) -> None:
    limit = Decimal(ceiling) if ceiling is not None else None
    assert spend_level(Decimal(spent), limit, ratio) == level


@pytest.mark.parametrize(
    "raw",
    [
        "١٠٠",  # Arabic-Indic 100
        "$١٠٠",
        "１０",  # fullwidth 10
        "५",  # Devanagari 5
        "1.٥٠",
        "𝟗",  # mathematical bold 9
    ],
)
def test_only_ascii_digits_are_an_amount(raw):
    with pytest.raises(BadLimit, match="is not an amount"):
        parse_limit(raw)


def test_a_huge_or_multiline_value_is_quoted_short_on_one_line():
    with pytest.raises(BadLimit) as caught:
        parse_limit("1" + "0" * 5000)
    said = str(caught.value)  # its 40 characters of the value and an example, not 5,001
    assert len(said) < 160 and "\n" not in said
    with pytest.raises(BadLimit) as caught:
        parse_limit("5\n/limit off")
    assert "\n" not in str(caught.value)


def test_a_spend_not_all_priced_is_said_as_its_row_says_it():
    """`$?` on a model with no known price (its calls count $0, not what
    they cost), `$0.40+$?` when the rest of it is unpriced: never `$0.00`."""
    unpriced, floor = Priced(price_known=False), Priced(floor_priced=True)
    assert standing(Decimal(0), None, unpriced) == "$? spent today, against no limit."
    assert standing(Decimal("0.4"), None, floor) == "$0.40+$? spent today, against no limit."
    assert set_reply(Decimal(0), Decimal(5), unpriced) == (
        "Spending limit set to $5.00 a day. $? spent today, of $5.00 a day."
    )
