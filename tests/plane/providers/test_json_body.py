"""A request's body, as the plane sends it: the JSON the standard library
would write, compact and UTF-8, for whatever a request or a gateway client's
body holds; what only the standard library can write, it writes."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plane.providers.connections import json_body
from tests.support.fixtures_examples import examples


def standard(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text()
finite = st.floats(allow_nan=False, allow_infinity=False)
values = st.recursive(
    scalars | finite,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(), inner, max_size=6),
    max_leaves=40,
)
exact = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(), inner, max_size=6),
    max_leaves=40,
)


@settings(max_examples=examples(500), deadline=None)
@given(exact)
def test_the_body_is_the_standard_librarys_to_the_byte(value):
    """Text of every kind (quotes, control characters, every plane of
    Unicode, written as UTF-8, not escaped), integers, nesting."""
    assert json_body(value) == standard(value)


@settings(max_examples=examples(300), deadline=None)
@given(values)
def test_a_float_reads_back_as_the_same_number(value):
    """A float may be written another way (1e16 or 1e+16): it is the same number."""
    assert json.loads(json_body(value)) == json.loads(standard(value))


@pytest.mark.parametrize(
    "value",
    [{1: "a", 2.5: "b", None: "c", False: "d"}, {"n": 2**70}, [-(2**64)]],
    ids=["keys not strings", "integer past 64 bits", "negative past 64 bits"],
)
def test_what_only_the_standard_library_writes_it_writes(value):
    assert json_body(value) == standard(value)


def test_what_neither_writes_is_refused_as_before():
    with pytest.raises(TypeError):
        json_body({"a": object()})


def test_a_float_that_is_not_a_number_is_sent_as_null():
    """No provider's API has one; the standard library refused the whole call."""
    assert json_body({"temperature": math.nan}) == b'{"temperature":null}'
