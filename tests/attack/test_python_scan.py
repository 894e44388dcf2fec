"""Hostile Python for the line scanner that stands in for the parser in the fold plan.

Strings that hold `def`, triple-quoted strings at the left edge, backslashes,
tabs, unclosed brackets, files that are not Python, CRLF, a byte-order mark,
3,000 nested blocks: the scanner and the plan never raise, every result
expands back to the input, and where the input is Python the plan is the
parser's and its result still parses.
"""

from __future__ import annotations

import ast

import pytest

from plane.economy.compress import compress, expand
from plane.economy.compress.formats import python_scan, source_python
from tests.plane.compress.test_python_scan import parser_only

BODY = "".join(f"    step_{i} = {i}\n" for i in range(8))

HOSTILE = {
    "strings holding `def` at the left edge": (
        "def f():\n"
        '    text = """\n'
        "def g():\n"
        "    return 1\n"
        "class H:\n"
        "    pass\n"
        '"""\n' + BODY + "    return text\n\n\ndef after():\n" + BODY
    ),
    "a triple-quoted string dedented past its block, ending on a code-like line": (
        "class A:\n"
        "    def f(self):\n"
        "        x = '''\n"
        "    def not_a_method(self):\n"
        "        return 2\n"
        "# not a comment'''\n" + BODY.replace("    ", "        ") + "        return x\n"
    ),
    "lines continued by backslash, in a header and a body": (
        "def f(a, \\\n      b):\n"
        "    total = a + \\\n        b\n"
        "    if total and \\\n            a:\n"
        "        pass\n" + BODY + "    return total\n"
    ),
    "a backslash into a blank line": "def f():\n    x = 1 + \\\n\n" + BODY,
    "tabs": "def f():\n\tx = 1\n\ty = 2\n\tz = 3\n\treturn x\n",
    "tabs and spaces mixed": "def f():\n\tx = 1\n        y = 2\n\treturn x\n",
    "an unclosed bracket": "def f():\n    x = (1,\n" + BODY,
    "an unclosed triple-quoted string": 'def f():\n    """never closed\n' + BODY,
    "a closing bracket too many": "def f():\n    x = 1)\n" + BODY,
    "not Python: a shell session": "$ ls -l\ntotal 4\n-rw-r--r-- 1 a a 0 x.py\n",
    "not Python: prose with colons": "Steps:\n    first do this\n    then that\n",
    "not Python: Python 2": "def f():\n    print 'hello'\n" + BODY,
    "not Python: a broken statement the scanner reads as one": "def f():\n    x = = 1\n" + BODY,
    "CRLF": ("def f():\n" + BODY + "    return 1\n").replace("\n", "\r\n"),
    "a byte-order mark": "\ufeffdef f():\n" + BODY + "    return 1\n",
    "a form feed": "def f():\n" + BODY + "\f\ndef g():\n" + BODY,
    "NUL bytes": "def f():\n" + BODY + "\x00\n",
    "comments and decorators only": "# one\n@decorator\n# two\n",
    "a decorator before nothing": "@decorator\n",
    "an empty file": "",
    "only blank lines": "\n\n   \n\t\n",
    "a lone backslash at the end": "x = 1\\",
    "quotes of every kind unbalanced": "x = '''a\"\"\"b'''\ny = \"'\"\nz = '\"'\n" + BODY,
    "a string prefix Python 3 rejects": "x = ur'no'\n" + BODY,
    "deep brackets": "x = " + "(" * 500 + ")" * 500 + "\n",
    "a long line": "x = [" + ", ".join(str(i) for i in range(20_000)) + "]\n",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_python_never_breaks_the_plan(name: str) -> None:
    source = HOSTILE[name]
    lines = source.split("\n")
    python_scan.scan(source, lines)  # answers or not; never raises
    plan = source_python.compress(lines)
    result = compress(source, command="cat hostile.py")
    assert expand(result.text, result.refs.__getitem__) == source
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return  # (what the scanner reads as statements it may fold as the parser would not)
    with parser_only():
        assert source_python.compress(lines) == plan  # the parser's plan, to the byte
    if result.compressor == "source":
        ast.parse(result.text)


def test_three_thousand_nested_blocks_are_left_to_the_parser() -> None:
    """Deeper than Python's tokenizer allows (100 levels): the scanner gives up on its
    own bound, the parser refuses, and the plan is None, without a recursion error.
    Three times Python's default recursion limit (1,000), so a scan that recursed a block
    at a time would fail here; not deeper, as level n is n spaces (10,000 levels: 50 MB)."""
    depth = 3_000
    source = "".join(" " * i + "if x:\n" for i in range(depth)) + " " * depth + "pass\n"
    lines = source.split("\n")
    assert python_scan.scan(source, lines) is None
    assert source_python.compress(lines) is None


def test_nesting_up_to_the_bound_is_read() -> None:
    depth = python_scan.MAX_DEPTH - 2
    source = "".join("    " * i + f"if x{i}:\n" for i in range(depth)) + "    " * depth + "pass\n"
    lines = source.split("\n")
    assert python_scan.scan(source, lines) is not None
    with parser_only():
        parsed = source_python.compress(lines)
    assert source_python.compress(lines) == parsed
