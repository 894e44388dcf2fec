"""What the plane says while its shared store (PostgreSQL) is away, whole,
with the moment filled in: a send refused, never acked and lost, and any
other request, which says whether it changed anything."""

from datetime import UTC, datetime

from plane.wire.words import request_refused, send_refused, store_unreachable

WENT = datetime(2026, 11, 29, 10, 4, 5, 600_000, tzinfo=UTC)


def test_the_store_away_sentences_name_the_second_it_went():
    assert store_unreachable(WENT) == "The store is unreachable since 10:04:05 UTC"
    assert send_refused(WENT) == (
        "The store is unreachable since 10:04:05 UTC: the message was not kept; "
        "send it again once the store is back."
    )
    assert request_refused(WENT, changes=True) == (
        "The store is unreachable since 10:04:05 UTC: nothing changed; "
        "ask again once the store is back."
    )
    assert request_refused(WENT, changes=False) == (
        "The store is unreachable since 10:04:05 UTC: ask again once the store is back."
    )
