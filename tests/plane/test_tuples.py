"""plane.tuples' NamedTuple makes the class typing's makes: the same fields, defaults,
methods and wording, so trading one for the other changes nothing but an import."""

from __future__ import annotations

import pickle
import typing

import pytest

from plane import tuples


class Ours(tuples.NamedTuple):
    """A span, as the compressor's folds are written."""

    start: int
    end: int
    kind: str = "lines"
    weight: int = 0

    def size(self) -> int:
        return self.end - self.start

    @classmethod
    def empty(cls) -> Ours:
        return cls(0, 0)

    @property
    def label(self) -> str:
        return f"{self.kind} {self.start}:{self.end}"


class Theirs(typing.NamedTuple):
    """A span, as the compressor's folds are written."""

    start: int
    end: int
    kind: str = "lines"
    weight: int = 0

    def size(self) -> int:
        return self.end - self.start

    @classmethod
    def empty(cls) -> Theirs:
        return cls(0, 0)

    @property
    def label(self) -> str:
        return f"{self.kind} {self.start}:{self.end}"


def test_a_class_on_plane_tuples_is_what_typing_makes_of_the_same_body() -> None:
    ours, theirs = Ours(3, 8, weight=2), Theirs(3, 8, weight=2)
    assert Ours.__bases__ == Theirs.__bases__ == (tuple,)
    assert Ours._fields == Theirs._fields == ("start", "end", "kind", "weight")
    assert Ours._field_defaults == Theirs._field_defaults == {"kind": "lines", "weight": 0}
    assert typing.get_type_hints(Ours) == typing.get_type_hints(Theirs)
    assert Ours.__doc__ == Theirs.__doc__ and Ours.__module__ == Theirs.__module__
    assert (Ours.__name__, Ours.__qualname__) == ("Ours", "Ours")
    assert repr(ours) == repr(theirs).replace("Theirs", "Ours")
    assert ours == (3, 8, "lines", 2) == theirs and hash(ours) == hash(theirs)
    assert ours.weight == 2 and ours.kind == "lines"
    assert ours._replace(end=9) == Ours(3, 9, "lines", 2)
    assert ours._asdict() == theirs._asdict()
    assert (ours.size(), ours.label) == (5, "lines 3:8") and Ours.empty() == (0, 0, "lines", 0)
    assert pickle.loads(pickle.dumps(ours)) == ours
    assert Ours._make([1, 2, "x", 0]) == Ours(1, 2, "x")
    assert not hasattr(ours, "__dict__")  # as light as a tuple
    field = "start"
    with pytest.raises(AttributeError):
        setattr(ours, field, 4)
    with pytest.raises(TypeError):
        Ours._make([1])


BAD = """
from __future__ import annotations

class Bad(NamedTuple):
    a: int = 1
    b: int
"""


@pytest.mark.parametrize(
    "named_tuple", [tuples.NamedTuple, typing.NamedTuple], ids=["plane.tuples", "typing"]
)
def test_a_field_without_a_default_after_one_with_is_refused_as_typing_refuses_it(
    named_tuple: object,
) -> None:
    """namedtuple itself would take it, giving `a`'s default to `b`. (Run from text: a type
    checker refuses the class before it runs.)"""
    with pytest.raises(TypeError, match="default"):
        exec(BAD, {"NamedTuple": named_tuple, "__name__": __name__})
