"""Python parsed once: a plan's folds are proved to leave valid Python from the input's tree.

`python_shape.still_parses` may only answer True where parsing the result would: it spares
a parse, never turns an answer around. Checked on crafted traps (a comment-like line in a
string, statements sharing a line, an `elif`, a header running over lines) and on random
folds over real Python files.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import random
import textwrap
from pathlib import Path

import pytest

from plane.economy.compress import compress
from plane.economy.compress.formats import python_shape, source_python
from plane.economy.compress.plan import Fold, Plan, render
from tests.plane.compress.helpers import fixture, random_folds


def _parses(plan: Plan) -> bool:
    try:
        ast.parse(render(plan)[0])
    except SyntaxError:
        return False
    return True


def _plan(source: str, *folds: tuple[int, int, str]) -> tuple[Plan, ast.Module]:
    lines = textwrap.dedent(source).split("\n")
    plan = Plan(lines, comment="...  # ")
    for start, end, kind in folds:
        plan.folds.append(Fold(start, end, kind, kind == "body"))
    return plan, ast.parse("\n".join(lines))


TRAPS = {
    "a string's last lines look like comments": (
        '''
        x = """
        # a
        # b
        # c"""
        y = 1
        ''',
        (2, 4, "comments"),
    ),
    "a header's string ends on a comment-like line": (
        '''
        def f(x="""
        # a
        # b"""):
            y = 1
            z = 2
        ''',
        (2, 6, "body"),
    ),
    "statements share a line, the second running on past the fold": (
        """
        def f():
            a = 1; b = (2,
                3)
            c = 4
        """,
        (2, 3, "body"),
    ),
    "a string's last lines look like comments, statements after it": (
        '''
        x = """
        # a
        # b"""
        y = 1
        z = 2
        ''',
        (2, 5, "body"),
    ),
    "comments before an elif": (
        """
        if a:
            x = 1
        # one
        # two
        elif b:
            y = 2
        """,
        (4, 5, "comments"),
    ),
    "a comment at another indent leads the body": (
        """
        def f():
        # said at the margin
            a = 1
            b = 2
        """,
        (2, 5, "body"),
    ),
    "the line before runs on": (
        """
        x = 1 \\
        # c
        # d
        y = 2
        """,
        (2, 4, "comments"),
    ),
    "a docstring of two strings": (
        '''
        def f():
            """One
            two
            three""" """four
            five
            six"""
        ''',
        (3, 6, "docstring"),
    ),
    "a parenthesised docstring": (
        '''
        def f():
            ("""One
            two
            three""")
        ''',
        (3, 4, "docstring"),
    ),
}


@pytest.mark.parametrize("name", sorted(TRAPS))
def test_a_trap_is_never_called_valid(name: str) -> None:
    source, fold = TRAPS[name]
    plan, tree = _plan(source, fold)
    assert not python_shape.still_parses(plan, tree)


VALID = {
    "whole statements with a comment leading them": (
        """
        def f():
            # it's the first
            a = 1
            b = [2,
                 3]
        """,
        (2, 6, "body"),
    ),
    "an if's body ending the fold, then the statements after the if": (
        """
        def f():
            if a:
                b = 1
                c = 2
            d = 3
            e = 4
        """,
        (4, 7, "body"),
    ),
    "an elif chain, whole": (
        """
        if a:
            x = 1
        elif b:
            y = 2
        else:
            z = 3
        """,
        (3, 7, "body"),
    ),
    "comments before a decorated function": (
        """
        x = 1
        # one
        # two
        # three
        @decorated
        def f():
            pass
        """,
        (3, 5, "comments"),
    ),
    "inside a docstring": (
        '''
        def f():
            r"""One
            two
            three
            four
            """
        ''',
        (3, 5, "docstring"),
    ),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_a_valid_shape_is_known_without_parsing(name: str) -> None:
    source, fold = VALID[name]
    plan, tree = _plan(source, fold)
    assert python_shape.still_parses(plan, tree) and _parses(plan)


def _real_sources() -> list[str]:
    return [
        fixture("textwrap_py.txt"),
        inspect.getsource(argparse),
        inspect.getsource(ast),
        Path(inspect.getsourcefile(random) or "").read_text(),
    ]


def test_random_folds_over_real_python_are_called_valid_only_when_they_are() -> None:
    rng = random.Random(29)
    proved = 0
    for source in _real_sources():
        lines = source.split("\n")
        tree = ast.parse(source)
        statements = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
        starts = sorted({n.lineno - 1 for n in statements})
        ends = sorted({n.end_lineno or 0 for n in statements})
        for _ in range(150):
            plan = random_folds(rng, lines, starts, ends)
            if python_shape.still_parses(plan, tree):
                proved += 1
                assert _parses(plan), [(f.start, f.end, f.kind) for f in plan.merged()]
    assert proved > 30  # the random folds did reach the shapes that are proved


def test_a_python_file_is_read_by_the_line_scanner_not_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[int] = []
    real = source_python.parse

    def counting(source: str) -> ast.Module:
        parsed.append(len(source))
        return real(source)

    monkeypatch.setattr(source_python, "parse", counting)
    result = compress(fixture("textwrap_py.txt"), command="cat textwrap.py")
    assert result.compressor == "source" and "...  # [… body" in result.text
    assert parsed == []
    tabbed = fixture("textwrap_py.txt").replace("\n    ", "\n\t")  # a tab: the parser decides
    result = compress(tabbed, command="cat textwrap.py")
    assert result.compressor == "source" and "...  # [… body" in result.text
    assert len(parsed) == 1
