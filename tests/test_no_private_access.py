"""No test reaches into the plane's private parts: a name with a leading
underscore that plane/ or tui/ defines (a method, an attribute, a module's
function) is never read, called or patched from tests/. A test asks through
what the code offers (a public attribute, a request, the store's rows) or
through behaviour, so the inside can change without a test of the outside
breaking, and a test never passes on a state no user can reach."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.sources import own_sources

pytestmark = pytest.mark.xdist_group("private-names")
"""On one worker, where the plane's names are read once (`defined_privately`)."""

ROOT = Path(__file__).resolve().parents[1]
OURS = ("plane", "tui")
OWNERS = ("self", "cls")
"""Whose private names are their own to use: a class's, in its own methods."""
PATCHED = re.compile(r"^(plane|tui)(\.\w+)*\.(_[a-z]\w*)$")
"""A private name given by its dotted path, as `monkeypatch.setattr` takes it."""


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@functools.cache
def defined_privately(package: str) -> frozenset[str]:
    """Every private name `package` defines: functions and methods, class
    attributes, and attributes set on `self`. (Read once a run: the tests
    here read the same code.)"""
    names: set[str] = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return frozenset(name for name in names if private(name))


WORD = re.compile(r"(?<!\w)_\w*")
"""A word that starts with an underscore, as a name or inside a string."""
AS_ATTRIBUTE = re.compile(r"\.\s*_\b")
"""`._`: the one private name, `_`, that too many files use as a word to go by."""
IMPORTED = re.compile(
    r"\bfrom\s+(?:plane|tui)\b[\w.\s]*?\bimport\b(\s*\([^)]*\)|(?:[^\n\\]|\\\n)*)"
)
"""What a `from plane… import` or `from tui… import` statement imports."""


def may_reach(text: str, names: frozenset[str]) -> bool:
    """Whether a file's text holds one of `names` as a word (an attribute, or a
    dotted path in a string, is one), `._`, or a private name among what it
    imports from plane/ or tui/: a file that does not is not parsed, as no
    node of it could be a reach. (Most tests are such files; parsing and
    walking every one was most of this scan's CPU.)"""
    return (
        not set(WORD.findall(text)).isdisjoint(names - {"_"})
        or AS_ATTRIBUTE.search(text) is not None
        or any(private(word) for found in IMPORTED.findall(text) for word in WORD.findall(found))
    )


def reaches(path: Path, names: frozenset[str], root: Path = ROOT) -> Iterator[str]:
    """Where the test at `path` touches one of `names` on an object not its own."""
    where = path.relative_to(root)
    text = path.read_text()
    if not may_reach(text, names):
        return
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Attribute) and node.attr in names:
            if not (isinstance(node.value, ast.Name) and node.value.id in OWNERS):
                yield f"{where}:{node.lineno}: .{node.attr}"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in OURS:
            for alias in node.names:
                if private(alias.name):
                    yield f"{where}:{node.lineno}: from {node.module} import {alias.name}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if (found := PATCHED.match(node.value)) and found.group(3) in names:
                yield f"{where}:{node.lineno}: {node.value!r}"


def test_no_test_touches_a_private_name_of_the_plane_or_the_tui() -> None:
    names = defined_privately("plane") | defined_privately("tui")
    assert "_lock" in names, "the scan reads the plane's code"
    found = [hit for path in own_sources() for hit in reaches(path, names)]
    assert found == [], "tests reach private names:\n" + "\n".join(found)


def test_the_scan_finds_a_private_access_and_a_patched_private_path(tmp_path: Path) -> None:
    """The contract can fail: each form it looks for is found."""
    sample = tmp_path / "test_reaching_in.py"
    sample.write_text(
        "def test(plane, monkeypatch):\n"
        "    plane._lock\n"
        "    monkeypatch.setattr('plane.daemon.server.Plane._lock', None)\n"
        "    self._lock\n"
        "    plane._not_the_planes\n"
    )
    assert list(reaches(sample, defined_privately("plane"), root=tmp_path)) == [
        "test_reaching_in.py:2: ._lock",
        "test_reaching_in.py:3: 'plane.daemon.server.Plane._lock'",
    ]


def test_a_private_name_imported_from_the_plane_is_found(tmp_path: Path) -> None:
    """The scan reads imports too: `from plane.x import _helper` is a reach
    inside as much as `x._helper` is."""
    test = tmp_path / "test_reach.py"
    test.write_text(
        "from plane.cli.status import _text\nfrom tests.support import _own\n"
        "from tui.app import (\n    PlaneApp,\n    _hidden,\n)\n"
    )
    assert list(reaches(test, frozenset(), tmp_path)) == [
        "test_reach.py:1: from plane.cli.status import _text",
        "test_reach.py:3: from tui.app import _hidden",
    ]
