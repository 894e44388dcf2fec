"""Python's statements read by a line scanner: the same tree, hence the same plan, as the parser's.

`python_scan.scan` stands in for `ast.parse` in the fold plan. Where it answers, every
statement it finds must stand where the parser puts it (first and last line, indent,
kind, docstring or not), and the plan made from it must be the plan made from the
parsed tree; where it is not sure it answers None and the file is parsed. Checked on
crafted Python, on the fixtures, on the standard library, and on folds that
`python_shape` proves from the scanned tree (each result parsed here).
"""

from __future__ import annotations

import ast
import contextlib
import random
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plane.economy.compress import compress
from plane.economy.compress.formats import python_scan, python_shape, source_python
from plane.economy.compress.plan import render
from tests.plane.compress.helpers import fixture, random_folds

STDLIB = sorted(Path(ast.__file__).parent.glob("*.py"))


@contextlib.contextmanager
def parser_only() -> Iterator[None]:
    """The plan as it was made before the scanner: from the parsed tree."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(python_scan, "scan", lambda text, lines: None)
        yield


@contextlib.contextmanager
def recording(module: Any, name: str) -> Iterator[list[Any]]:
    """What `module.name` answers while inside, in order: the tree the plan was made
    from, read where the plan read it instead of scanned or parsed again here."""
    answers: list[Any] = []
    real = getattr(module, name)

    def recorded(*args: Any) -> Any:
        answers.append(answer := real(*args))
        return answer

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, name, recorded)
        yield answers


def _kind(node: ast.AST) -> str:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return "def"
    if isinstance(node, ast.ClassDef):
        return "class"
    if isinstance(node, ast.If):
        return "if"
    if isinstance(node, ast.For | ast.AsyncFor | ast.While):
        return "loop"
    if isinstance(node, ast.With | ast.AsyncWith):
        return "with"
    if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
        return "try"
    if isinstance(node, ast.Match):
        return "match"
    if (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ):
        return "string"
    return "simple"


def _first(node: Any) -> int:
    decorators = getattr(node, "decorator_list", ())
    return min([node.lineno, *(d.lineno for d in decorators)])


def _blocks(node: Any) -> list[list[Any]]:
    found = [getattr(node, name, None) or [] for name in ("body", "orelse", "finalbody")]
    found += [clause.body for name in ("handlers", "cases") for clause in getattr(node, name, ())]
    return [block for block in found if not block or not isinstance(block[0], ast.expr)]


def _same_statements(scanned: list[Any], parsed: list[Any], lines: list[str]) -> None:
    """Statement by statement, block by block: where each stands, what it is."""
    assert len(scanned) == len(parsed), (
        [(_kind(n), n.lineno) for n in scanned],
        [(_kind(n), n.lineno) for n in parsed],
    )
    for mine, theirs in zip(scanned, parsed, strict=True):
        where = f"line {theirs.lineno}: {lines[theirs.lineno - 1]!r}"
        assert _kind(mine) == _kind(theirs), where
        assert (mine.lineno, mine.end_lineno) == (theirs.lineno, theirs.end_lineno), where
        assert _first(mine) == _first(theirs), where
        line = lines[theirs.lineno - 1]
        if theirs.col_offset == len(line) - len(line.lstrip()):
            assert mine.col_offset == theirs.col_offset, where
        for ours, parsers in zip(_blocks(mine), _blocks(theirs), strict=True):
            _same_statements(ours, parsers, lines)


def assert_read_as_the_parser_reads(source: str) -> bool:
    """True when the scanner answered (and agreed), False when it left the file to the
    parser. Either way the plan is the parser's."""
    lines = source.split("\n")
    with parser_only(), recording(source_python, "parse") as parsed:
        expected = source_python.compress(lines)
    with recording(python_scan, "scan") as scans:
        assert source_python.compress(lines) == expected
    [scanned] = scans
    if scanned is None:
        return False
    assert parsed, "the scanner answered where the parser refuses"
    _same_statements(scanned.body, parsed[0].body, lines)
    return True


CRAFTED = {
    "decorators, comments between, a class inside a function": '''
        import os  # a comment with "quotes" and 'more'


        @decorator(
            "an argument over lines",
        )
        # a comment between decorators
        @other
        def f(a, b=(1, 2), *args, **kw) -> dict[str, int]:
            """A docstring.

            With lines.
            """
            class Inner:
                x = 1

                def method(self):
                    return self.x
            return Inner
        ''',
    "every clause": """
        def g(x):
            if x:
                pass
            elif x > 1:
                pass
            elif (x <
                  2):
                pass
            else:
                pass
            for i in range(3):
                continue
            else:
                pass
            while False:
                break
            else:
                pass
            try:
                pass
            except ValueError as err:
                raise
            except (KeyError, IndexError):
                pass
            else:
                pass
            finally:
                pass
            try:
                pass
            finally:
                pass
            with open(x) as f, open(x) as g:
                pass
        """,
    "async, match, walrus, lambda in a header": """
        async def h(items):
            async for item in items:
                pass
            async with items as held:
                pass
            if (n := len(items)) > 1 and (lambda: 1)():
                pass
            match items:
                case [a, b]:
                    return a
                case {"k": 1, **rest}:
                    return rest
                case _:
                    pass
            match = 1
            case = 2
            return match + case
        """,
    "bodies on their header's line": """
        class E(Exception): pass
        def one(): return 1
        if True: x = 1
        else: x = 2
        try: import json
        except ImportError: json = None
        for i in []: pass
        while False: pass
        with open(name) as f: pass
        def two(d): return d["a: b"], f"{d}:"
        if two("k:"): raise ValueError("no: such key")
        elif (n := len("ab")) > 1: x = "several"
        """,
    "strings that look like code, and comments that look like strings": """
        def f():
            text = '''
        def g():
            return 1
        class Fake:
            pass
        '''
            more = "# not a comment", 'def inside', "\\\\"
            # a comment holding ''' and \"\"\"
            return text, more


        x = r"a raw string ending in a backslash-quote \\" still"
        y = b"bytes" rb'raw bytes' Rb"more"
        z = f"{x!r:>10} {y}" F'{1}' fr"{x}\\d" rf'\\w'
        w = u"unicode"
        """,
    "docstrings of every kind": '''
        r"""A raw module docstring.

        Over lines.
        """


        def raw():
            r"""Raw \\d."""


        def unicode_prefix():
            u"""Unicode."""


        def concatenated():
            "one" "two"
            return 1


        def fstring():
            f"""not a docstring {raw}"""
            return 1


        def bytes_first():
            b"""not a docstring either"""
            return 1


        def single():
            'single quotes'


        class C:
            """Class doc."""

            def m(self):
                \'\'\'Method doc
                over lines.\'\'\'
                return 1
        ''',
    "brackets and backslashes": """
        values = [
            1,  # one
            # a comment line inside brackets
            2,
        ]
        total = 1 + \\
            2 + \\
            3
        if values and \\
                total:
            pass
        call(a,
             b)(c)[d]
        d = {
            "k": (1, [2, {3}]),
        }
        """,
    "comments and blank lines at odd indents": """
        def f():
            x = 1
        # a comment at the left edge, inside f
                # and one far to the right

            return x
            # a trailing comment
        # another


        y = 2
        """,
}


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_crafted_python_is_read_as_the_parser_reads_it(name: str) -> None:
    assert assert_read_as_the_parser_reads(textwrap.dedent(CRAFTED[name]).lstrip("\n"))


def test_fixtures_are_read_as_the_parser_reads_them() -> None:
    assert assert_read_as_the_parser_reads(fixture("textwrap_py.txt"))
    assert not assert_read_as_the_parser_reads(fixture("python_defs.txt"))  # not Python


def test_the_standard_library_is_read_as_the_parser_reads_it() -> None:
    """Every third module of this Python's standard library (the scanner may leave a
    module to the parser; it must read most)."""
    read = 0
    sample = STDLIB[::3]
    for path in sample:
        try:
            source = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        read += assert_read_as_the_parser_reads(source)
    assert read >= 0.6 * len(sample)


UNSURE = {
    "a tab in an indent": "def f():\n\treturn 1\n",
    "a semicolon": "def f():\n    x = 1; y = 2\n    return x\n",
    "a parenthesized docstring": 'def f():\n    ("doc")\n    return 1\n',
    "a body on its header's line led by a string": 'def f(): "doc"\n',
    "one led by a prefixed string": "def f(): rb'doc'\n",
    "Python 2's print": 'def f():\n    print "hello"\n',
    "CRLF": "def f():\r\n    return 1\r\n",
    "a BOM": "\ufeffdef f():\n    return 1\n",
    "a header with no block": "def f():\n",
    "an unexpected indent": "x = 1\n    y = 2\n",
    "a dedent to no block": "if x:\n        y = 1\n    z = 2\n",
    "an unclosed bracket": "x = (1,\n",
    "an unclosed string": 'x = """never closed\n',
    "a closing bracket too many": "x = 1)\n",
    "a line no statement starts so": ":caption: hello.py\n\nimport click\n",
    "an `else` after a function": "def f():\n    pass\nelse:\n    pass\n",
    "`ur` strings": 'x = ur"no"\n',
    "a name run into a quote": 'x = abc"def"\n',
}


@pytest.mark.parametrize("name", sorted(UNSURE))
def test_what_the_scanner_is_not_sure_of_is_left_to_the_parser(name: str) -> None:
    source = UNSURE[name]
    assert python_scan.scan(source, source.split("\n")) is None
    assert_read_as_the_parser_reads(source)


def test_folds_proved_from_the_scanned_tree_parse() -> None:
    """Random folds over a real file: wherever `python_shape` proves a fold from the
    scanned tree, the rendered result parses (it may only answer True where it does)."""
    rng = random.Random(7)
    source = fixture("textwrap_py.txt")
    lines = source.split("\n")
    tree = python_scan.scan(source, lines)
    assert tree is not None
    statements = [node for node in _walk(tree.body)]
    starts = sorted({_first(n) - 1 for n in statements})
    ends = sorted({n.end_lineno for n in statements})
    proved = 0
    for _ in range(400):
        plan = random_folds(rng, lines, starts, ends)
        if python_shape.still_parses(plan, tree):
            proved += 1
            ast.parse(render(plan)[0])
    assert proved > 20


def _walk(body: list[Any]) -> Iterator[Any]:
    for node in body:
        yield node
        for block in _blocks(node):
            yield from _walk(block)


@pytest.mark.parametrize("path", STDLIB[1::7], ids=lambda p: p.name)
def test_compressed_python_still_parses(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    result = compress(source, command=f"cat {path.name}")
    if result.compressor == "source":
        ast.parse(result.text)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # (`"\ "` put into a string)
def test_mutated_python_never_breaks_the_plan() -> None:
    """A real file with random bytes of Python's syntax put in or taken out: the scanner
    and the plan never raise, and wherever the scanner answers on a file the parser
    takes, the plan is the parser's and its result parses."""
    rng = random.Random(11)
    source = fixture("textwrap_py.txt")
    pieces = ['"', "'", '"""', "#", "\\", "(", ")", ":", "\n", "\t", " ", "    ", "def ", "@"]
    answered = 0
    for _ in range(120):
        text = source
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(text))
            if rng.random() < 0.5:
                text = text[:at] + rng.choice(pieces) + text[at:]
            else:
                text = text[:at] + text[at + rng.randint(1, 3) :]
        lines = text.split("\n")
        scanned = python_scan.scan(text, lines)
        plan = source_python.compress(lines)
        try:
            with warnings.catch_warnings():  # (a backslash put into a string: `"\ "`)
                warnings.simplefilter("ignore")
                ast.parse(text)
        except SyntaxError:
            continue
        with parser_only():
            assert source_python.compress(lines) == plan
        if scanned is not None:
            answered += 1
            assert plan is not None
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ast.parse(render(plan)[0])
    assert answered > 5


def test_nested_f_string_quotes_are_left_to_the_parser_where_python_reads_them() -> None:
    source = 'def f(d):\n    x = f"{d["k"]}"\n    return x\n'
    if sys.version_info < (3, 12):
        assert python_scan.scan(source, source.split("\n")) is None  # not Python before 3.12
    else:
        assert_read_as_the_parser_reads(source)
