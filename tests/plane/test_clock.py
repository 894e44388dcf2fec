"""The moments the ledger writes: `stamp` is `isoformat`, text for text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from plane.clock import stamp

ZONES = st.sampled_from(
    [UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-5, minutes=-30))]
)


@given(st.datetimes(timezones=ZONES))
def test_a_stamp_is_the_moments_isoformat(moment: datetime) -> None:
    assert stamp(moment) == moment.isoformat()


NEAR = st.lists(
    st.builds(timedelta, seconds=st.integers(0, 3), microseconds=st.integers(0, 999_999)),
    min_size=2,
    max_size=20,
)


@given(st.datetimes(max_value=datetime(9999, 12, 31, 23, 59), timezones=st.just(UTC)), NEAR)
def test_moments_a_second_apart_each_get_their_own_second(
    start: datetime, offsets: list[timedelta]
) -> None:
    """Moments a few seconds apart, in any order (as a busy plane stamps them):
    each with its own second's text, never the one made before it."""
    for offset in offsets + offsets[::-1]:
        moment = start.replace(microsecond=0) + offset
        assert stamp(moment) == moment.isoformat()
