"""A figure of an object that does not change, worked out once an object.

A call's tool schemas are the same objects from one call to the next (the
toolbox keeps them, and a turn and the providers only read them): what a
call reckons from each (its characters, for the estimate and for cost by
tool) is the same each time, and writing a schema out to count it was a
tenth of a metered call's CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

MOST = 4096
"""The most objects kept; past it, the figures are forgotten and worked out again."""


class OncePerObject(Generic[K, V]):
    """`work(obj)`, kept for that very object (`is`; kept alive here, so its
    id is not another's while kept)."""

    def __init__(self, work: Callable[[K], V], most: int = MOST) -> None:
        self._work, self._most = work, most
        self._kept: dict[int, tuple[K, V]] = {}

    def __call__(self, obj: K) -> V:
        kept = self._kept.get(id(obj))
        if kept is not None and kept[0] is obj:
            return kept[1]
        figure = self._work(obj)
        if len(self._kept) >= self._most:
            self._kept.clear()
        self._kept[id(obj)] = (obj, figure)
        return figure
