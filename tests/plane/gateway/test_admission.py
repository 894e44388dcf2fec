"""Admission in dollars, read as a table: what a request asks for (every
shape whose bill its body does not tell), and the verdict on a call given
the day's standing and the calls in flight."""

from __future__ import annotations

from decimal import Decimal

import pytest

from plane.gateway.asked import IMAGE_TOKENS, chat_asked, messages_asked, responses_asked
from plane.gateway.estimate import Estimate
from plane.gateway.standing import Book, Standing, judge

HELLO = [{"role": "user", "content": "hello"}]
PNG = {"type": "base64", "media_type": "image/png", "data": "A" * 1_000_000}


def test_n_answers_each_bounded_by_the_limit() -> None:
    asked = chat_asked({"messages": HELLO, "n": 16, "max_completion_tokens": 20})
    assert (asked.choices, asked.output_limit, asked.unseen) == (16, 20, ())
    assert chat_asked({"messages": HELLO}).output_limit is None


@pytest.mark.parametrize(
    ("part", "unseen"),
    [
        ({"type": "document", "source": {"type": "url", "url": "https://x/r.pdf"}}, "URL"),
        ({"type": "document", "source": {"type": "file", "file_id": "file_1"}}, "a file"),
        (
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf"}},
            "a PDF",
        ),
        ({"type": "container_upload", "file_id": "file_1"}, "a file"),
    ],
)
def test_what_the_provider_fetches_is_unseen(part: dict, unseen: str) -> None:
    asked = messages_asked({"max_tokens": 10, "messages": [{"role": "user", "content": [part]}]})
    assert any(unseen in u for u in asked.unseen), asked.unseen
    assert asked.unbounded


def test_a_document_given_as_text_is_counted_as_text() -> None:
    document = {"type": "document", "source": {"type": "text", "data": "x" * 7000}}
    asked = messages_asked(
        {"max_tokens": 10, "messages": [{"role": "user", "content": [document]}]}
    )
    assert asked.unseen == () and asked.chars > 7000


def test_an_image_counts_as_tokens_not_as_its_bytes() -> None:
    image = {"type": "image", "source": PNG}
    asked = messages_asked({"max_tokens": 10, "messages": [{"role": "user", "content": [image]}]})
    assert asked.images == 1 and asked.chars < 100
    assert IMAGE_TOKENS == 1600


def test_server_tools_are_unseen_and_web_searches_bounded_by_max_uses() -> None:
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
    asked = messages_asked({"max_tokens": 10, "messages": HELLO, "tools": [search]})
    assert asked.unseen == ("web_search_20250305",) and asked.searches == 5
    unbounded = messages_asked(
        {"max_tokens": 10, "messages": HELLO, "tools": [{"type": "web_search_20250305"}]}
    )
    assert unbounded.searches is None
    client_tool = {"name": "Read", "input_schema": {"type": "object"}}
    plain = messages_asked({"max_tokens": 10, "messages": HELLO, "tools": [client_tool]})
    assert plain.unseen == () and plain.framing == 1100


def test_a_previous_response_a_stored_prompt_and_a_conversation_are_held_by_the_provider() -> None:
    asked = responses_asked({"input": "And?", "previous_response_id": "resp_1"})
    assert (asked.previous_response, asked.unseen) == ("resp_1", ("previous_response_id",))
    stored = responses_asked({"prompt": {"id": "pmpt_1", "variables": {"city": "Paris"}}})
    assert stored.context_key == "prompt:pmpt_1" and "a stored prompt" in stored.unseen
    talk = responses_asked({"input": "Hi", "conversation": {"id": "conv_1"}})
    assert talk.context_key == "conversation:conv_1"
    item = responses_asked({"input": [{"type": "item_reference", "id": "msg_1"}]})
    assert item.unseen == ("a stored item",)


def test_the_hour_cache_is_noticed() -> None:
    system = [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    assert messages_asked({"max_tokens": 1, "system": system, "messages": HELLO}).hour_cache


def call(likely: str, bound: str | None) -> Estimate:
    return Estimate(Decimal(likely), None if bound is None else Decimal(bound))


def standing(settled: str, flying: list[tuple[str, str | None]]) -> Standing:
    book = Book()
    for n, (likely, bound) in enumerate(flying):
        book.add(n, call(likely, bound))
    in_flight = book.likely()
    return Standing(
        Decimal(5), Decimal(settled) + in_flight, in_flight, book.bounds(), book.booked()
    )


@pytest.mark.parametrize(
    ("settled", "flying", "asked", "verdict"),
    [
        ("0.11", [], ("0.20", "2.10"), "go"),
        ("0.11", [("0.20", "2.10")], ("0.20", "2.10"), "go"),  # one bound drops out
        ("0.11", [("0.20", "2.10"), ("0.20", "2.10")], ("0.20", "2.10"), "go"),  # 4.20 of 4.89
        ("0.11", [("0.20", "2.10")] * 3, ("0.20", "2.10"), "may overshoot"),  # 6.30
        ("4.95", [], ("0.20", "0.30"), "too dear"),  # alone it does not fit
        ("4.50", [("0.30", "0.30")], ("0.30", "0.30"), "in flight"),  # it would, alone
        ("0", [("0.01", None)], ("0.01", "1.00"), "go"),  # one unbounded, the rest fit
        ("0", [("0.01", None)], ("0.01", None), "may overshoot"),  # never two unbounded
    ],
)
def test_the_verdict(
    settled: str, flying: list[tuple[str, str | None]], asked: tuple[str, str | None], verdict: str
) -> None:
    assert judge(standing(settled, flying), call(*asked)) == verdict


def test_a_call_in_flight_is_weighed_anew_once_its_prompt_is_announced() -> None:
    book = Book()
    book.add(1, call("1.80", "7.85"))
    assert book.tighten(1, Decimal("0.21"), Decimal("1.80"))
    assert (book.likely(), book.booked(), book.bounds()) == (
        Decimal("0.21"),
        Decimal("1.80"),
        [Decimal("1.80")],
    )
    assert not book.tighten(1, Decimal("0.50"), Decimal("9"))  # never up
