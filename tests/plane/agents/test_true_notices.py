"""Notices that are true: a zero ceiling is a pause (no "answers at 00:00
UTC"); below a dollar the figures say which side of the ceiling the spend
is on; the ceiling reached is said each time the agent is stopped (the
amber warning once a day); an answer the output limit cut says so; a failed
turn says what to do and shows no `$0.00 · 0 in · 0 out`."""

from __future__ import annotations

from decimal import Decimal

import pytest

from plane.agents import notices
from plane.wire.protocol import Usage
from plane.wire.words import spend_against
from tests.support.scripted_llm import Reply

TOKENS = Usage  # $0.001 an input token at the test prices


@pytest.mark.parametrize(
    ("spent", "ceiling", "shown"),
    [
        ("0.0196", "0.02", "$0.019"),  # amber: under, and it reads under
        ("0.0204", "0.02", "$0.021"),  # red: over, and it reads over
        ("0.02", "0.02", "$0.02"),  # exactly at it
        ("0.0199999", "0.02", "$0.019"),  # rounded away from the ceiling, never onto it
        ("4.10", "5", "$4.10"),  # cents when cents tell it
        ("4.999", "5", "$4.999"),
        ("5.0001", "5", "$5.001"),
        ("0.003", "0.01", "<$0.01"),
        ("0.003", "0", "$0.003"),  # over a zero ceiling, never `<$0.01` beside `$0.00`
        ("0", "1", "$0.00"),
        ("1234.5", "2000", "$1,234.50"),
    ],
)
def test_spend_beside_its_ceiling_has_the_digits_it_takes(spent, ceiling, shown):
    assert spend_against(Decimal(spent), Decimal(ceiling)) == shown
    assert spend_against(Decimal(spent), None) != "" and "$" in spend_against(Decimal(spent), None)


@pytest.mark.parametrize(
    ("likely", "left", "said"),
    [
        ("0.0082", "0.0018", "it would cost about $0.008, and $0.002 is left of its $0.01"),
        ("0.01", "0.0049", "it would cost about $0.010, and $0.005 is left of its $0.01"),
        ("0.20", "0.10", "it would cost about $0.20, and $0.10 is left of its $0.01"),
        ("0.0123", "0", "it would cost about $0.01, and $0.00 is left of its $0.01"),
    ],
)
def test_a_call_refused_as_too_dear_says_figures_that_tell_cost_from_what_is_left(
    likely, left, said
):
    """Never `about $0.01, and <$0.01 is left`: a refusal whose figures
    cannot be told apart gives no reason the operator can read."""
    sentence = notices.too_dear("claude", Decimal(likely), Decimal(left), Decimal("0.01"), "8h")
    assert said in sentence, sentence


@pytest.mark.parametrize(
    ("flying", "likely", "left", "shown"),
    [
        ("0.21", "0.21", "0.40", ("$0.21", "$0.21", "$0.40")),  # cents when cents tell it
        ("0.044", "0.003", "0.046", ("$0.044", "$0.003", "$0.046")),
        ("0.004", "0.004", "0.006", ("$0.004", "$0.004", "$0.006")),
        ("0.0052", "0.0001", "0.0052", ("$0.0052", "$0.0001", "$0.0052")),
    ],
)
def test_a_call_crowded_out_says_figures_that_add_up_to_more_than_is_left(
    flying, likely, left, shown
):
    """Never `about $0.04 and this one about <$0.01 would take more than the
    $0.05 left`: figures that do not add up to more give no reason."""
    sentence = notices.in_flight(
        "aider", Decimal(flying), Decimal(likely), Decimal(left), Decimal("0.05"), 5
    )
    others, this, rest = shown
    assert sentence == (
        f"aider's calls in flight (about {others}) and this one (about {this}) would take more "
        f"than the {rest} left of its $0.05 daily ceiling today; it waits for them to settle: "
        "retry in 5 seconds."
    )


async def test_below_a_dollar_amber_and_red_read_from_the_numbers(start_plane):
    plane = await start_plane()
    await plane.send("demo", "/limit $0.02")
    plane.llm.reply("one", usage=TOKENS(input_tokens=16))
    said = await plane.turn("demo", "first")
    assert said[-1].text == "demo has spent $0.016 today, 80% of its $0.02 daily ceiling."

    [_, reply] = await plane.send("demo", "/limit")
    assert reply.text == "$0.016 spent today, of $0.02 a day."

    plane.llm.reply("two", usage=TOKENS(input_tokens=5))
    said = await plane.turn("demo", "second")
    assert said[-1].text == (
        "demo has reached its $0.02 daily ceiling ($0.021 spent) and starts no new turn "
        "until 00:00 UTC, in 12h 00m, or until the limit is raised."
    )
    held = await plane.send("demo", "third")
    assert held[1].text.startswith("demo has spent $0.021 today, over its $0.02 daily ceiling;")


async def test_the_ceiling_reached_is_said_each_time_and_the_warning_once_a_day(start_plane):
    plane = await start_plane()
    plane.llm.default_reply = Reply("done", usage=TOKENS(input_tokens=400))
    for n in range(3):
        await plane.turn("demo", f"task {n}")  # $0.80 amber, $1.20: stopped
    await plane.send("demo", "/limit 2")
    await plane.quiet()
    for n in range(2):
        await plane.turn("demo", f"more {n}")  # $1.60 amber again, $2.00: stopped again
    texts = [m.text for m in await plane.services.conversation.history("demo")]
    reached = [t for t in texts if " has reached its " in t]
    assert [t.split(" and ")[0] for t in reached] == [
        "demo has reached its $1.00 daily ceiling ($1.20 spent)",
        "demo has reached its $2.00 daily ceiling ($2.00 spent)",
    ]
    assert sum("% of its" in t for t in texts) == 1, "the amber warning stays once a day"


async def test_a_zero_ceiling_is_a_pause_in_every_word(start_plane):
    plane = await start_plane()
    [_, reply] = await plane.send("demo", "/limit 0")
    assert reply.text == (
        "Spending limit set to $0.00 a day. $0.00 spent today, of $0.00 a day. "
        "A ceiling of $0.00 is a pause: no turn until the limit is raised."
    )
    held = await plane.send("demo", "hello")
    assert "paused" in held[1].text and "00:00" not in held[1].text
    state = await plane.rows.state("demo")
    assert state.status == "held" and state.resumes_at is None


async def test_an_answer_cut_at_the_output_limit_says_so(start_plane):
    plane = await start_plane()
    plane.llm.reply("The build failed because", usage=TOKENS(input_tokens=5), cut_at_limit=True)
    said = await plane.turn("demo", "why?")
    [answer] = [m for m in said if m.kind == "agent"]
    assert answer.text == "The build failed because (cut at 512 tokens)"
    history = await plane.services.transcript.load("demo")
    assert history[-1].content == "The build failed because", "kept as it came, for the model"

    plane.llm.reply("Whole.", usage=TOKENS(input_tokens=5))
    said = await plane.turn("demo", "again")
    assert [m.text for m in said if m.kind == "agent"] == ["Whole."]


async def test_a_failed_turn_says_what_to_do_and_shows_no_empty_cost_line(start_plane):
    plane = await start_plane()
    plane.llm.fault(503)
    said = await plane.turn("demo", "hello")
    assert [m.kind for m in said] == ["operator", "plane"]
    assert said[1].text == (
        "The turn stopped: scripted: the server failed (HTTP 503: scripted fault) (1 attempt). "
        "Nothing was charged; send the message again to retry."
    )


async def test_the_agents_own_budget_status_reads_the_same_digits(start_plane):
    plane = await start_plane()
    await plane.send("demo", "/limit $0.02")
    plane.llm.reply("", tool_calls=[("budget_status", {})], usage=TOKENS(input_tokens=16))
    plane.llm.reply("Pacing.", usage=TOKENS())
    await plane.turn("demo", "how am I doing?")
    [status] = [m["content"] for m in plane.llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert status.startswith("Spent today: $0.016 of a $0.02 daily ceiling (<$0.01 left). ")
