"""Every exception the plane defines is in the tree `plane/errors.py` draws,
so what a caller may catch is read in one place: a class defined elsewhere
is drawn on a line that also names its module."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator

import pytest

import plane
import plane.errors

pytestmark = pytest.mark.xdist_group("mcp-sdk")
"""On the worker that loads the MCP SDK for its tests: the walk below imports every
module of the plane, the SDK's link among them (about 0.6 CPU-seconds to load)."""

HOMES = ("plane.errors", "plane.wire.errors")
"""The modules the tree is of: a class of theirs needs no module named."""


def exceptions() -> Iterator[type[BaseException]]:
    """Every exception class defined in a module of the plane, nested ones too."""
    for info in pkgutil.walk_packages(plane.__path__, "plane."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue
        module = importlib.import_module(info.name)
        classes = [c for c in vars(module).values() if inspect.isclass(c)]
        while classes:
            cls = classes.pop()
            if cls.__module__ != info.name:
                continue
            classes.extend(c for c in vars(cls).values() if inspect.isclass(c))
            if issubclass(cls, BaseException):
                yield cls


def tree_line(name: str) -> str | None:
    doc = plane.errors.__doc__ or ""
    return next((line for line in doc.splitlines() if re.search(rf"\b{name}\b", line)), None)


def test_every_exception_of_the_plane_is_drawn_in_the_error_tree() -> None:
    found = sorted({(cls.__module__, cls.__qualname__) for cls in exceptions()})
    assert ("plane.money.limits", "BadLimit") in found, "the walk finds what it means to"
    missing, unplaced = [], []
    for module, name in found:
        line = tree_line(name)
        if line is None:
            missing.append(f"{module}.{name}")
        elif module not in HOMES and module.removeprefix("plane.") not in line:
            unplaced.append(f"{module}.{name}")
    assert missing == [], f"not in plane/errors.py's tree: {missing}"
    assert unplaced == [], f"drawn without the module it is defined in: {unplaced}"


def test_the_tree_draws_no_exception_the_plane_does_not_have() -> None:
    """A class renamed or removed leaves no line behind."""
    drawn = re.findall(r"[├└]── (\w+)", plane.errors.__doc__ or "")
    have = {cls.__qualname__ for cls in exceptions()}
    assert len(drawn) > 20, "the tree is read as drawn"
    assert [name for name in drawn if name not in have] == []
