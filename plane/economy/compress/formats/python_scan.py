"""Python's statements read from its lines, without the parser: the tree the plan needs.

The fold plan needs the statements of each block (where each starts and
ends), which are classes and functions, and which open with a docstring.
Parsing a 100 KB file for that cost more than the rest of `plane compress`
together, building a node for every name and constant. Statements are
plainer: a line scanner that knows strings, comments, brackets and
backslashes finds the logical lines, and their indentation finds the blocks.

The scanner answers only where it is sure: any line it cannot read as
Python reads it (a tab or form feed in an indent, CR, a BOM, a `;`, an
inline body led by a string, an unclosed string or bracket, an indent that
matches no block, a header with no block, a string prefix Python 3 rejects,
Python 2's `print x`, more than `MAX_DEPTH` blocks deep…) makes it give up,
and the caller parses the file as before. What it returns is made of the
parser's own node classes, with the positions the parser would give them,
so the plan and the proof that the plan leaves valid Python read it as they
read a parsed tree.
"""

from __future__ import annotations

import _ast as ast
import sys
from bisect import bisect_right
from itertools import accumulate

from plane.economy.compress.patterns import lazy
from plane.tuples import NamedTuple

TYPE_CHECKING = False  # typing's guard, without importing typing: see plane.tuples
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 100  # blocks deeper than this are left to the parser (its own bound is 100)
MAX_BRACKETS = 200  # so are brackets (Python's tokenizer refuses more than 200)
_SPECIAL = lazy(r"[\"'#\\;`]")  # what can hide a line's structure from str methods
_COLON = lazy(r"[\"':()\[\]{}]")  # what a header's colon may hide among
_WORD = lazy(r"[A-Za-z_]\w*")
_ASYNC = lazy(r"async +(def|for|with)\b")
_STARTS = frozenset("_\"'([{-+~@*.")  # what a statement may start with, beside a letter or digit
_PREFIXES = frozenset({"", "r", "u", "b", "f", "br", "rb", "fr", "rf"})
_NESTED_QUOTES = sys.version_info >= (3, 12)  # an f-string's fields may hold its own quote
_COMPOUND = frozenset({"if", "while", "for", "with", "try", "def", "class"})
_CLAUSES = frozenset({"elif", "else", "except", "finally"})
_TRY_CLAUSES = ("except", "else", "finally")


class _Unsure(Exception):
    """The lines are not plainly Python: let the parser read them."""


class Simple:
    """Any other simple statement: the plan needs only where it stands. Not a node of
    the parser's (a third of the cost of making one): `STATEMENT` stands for both."""

    __slots__ = ("col_offset", "end_lineno", "lineno")
    lineno: int
    end_lineno: int
    col_offset: int
    decorator_list = ()


STATEMENT = (ast.stmt, Simple)


# The parser's own classes (no subclasses: making a class cost more than a file's scan).
# `for` is read as a `while`: the plan asks a loop only for its body and its `else`.
_KINDS: dict[str, type[ast.stmt]] = {
    "if": ast.If,
    "while": ast.While,
    "for": ast.While,
    "with": ast.With,
    "try": ast.Try,
    "def": ast.FunctionDef,
    "class": ast.ClassDef,
}
_STRING = ast.Constant(value="")


class _Line(NamedTuple):
    """One logical line: its physical lines [first, last], indent, and what it holds."""

    first: int
    last: int
    indent: int
    text: str  # the first physical line from its indent on
    header: bool  # its code ends with `:`
    strings: int  # string tokens in it
    plain: bool  # nothing but strings (no f or b prefix), blanks and backslashes
    wrapped: bool  # it has brackets and nothing else beside its strings
    opening: int  # where its first string opens on its first line
    closing: int  # where its last string closes on its last line


_SPECIALS = ('"', "'", "#", "\\", ";", "`")


def logical_lines(lines: list[str], source: str | None = None) -> list[_Line]:
    """The logical lines, comment and blank lines left out; `_Unsure` where not plain.
    `source` is the lines joined, if the caller has it: a long string is then crossed
    with one search, not line by line."""
    out: list[_Line] = []
    new = tuple.__new__  # a line made without the named tuple's Python-level constructor
    special = _SPECIAL.search
    depth = 0  # open brackets
    string = ""  # the quote of a string still open at the end of the previous line
    joined = False  # the previous line ended in a backslash (outside a string)
    first = -1  # the first line of the logical line being read, -1 between them
    resume = -1  # the line where a long string ends (the lines before are in it)
    indent = strings = opening = closing = 0
    text = ""
    plain = wrapped = False
    offsets: list[int] = []  # where each line starts in `source`
    for i, line in enumerate(lines):
        if first < 0:
            text = line.lstrip(" ")
            if not text or text[0] == "#":
                continue
            if text[0] == "\t":
                if not text.strip(" \t") or text.lstrip(" \t")[0] == "#":
                    continue
                raise _Unsure  # a tab in an indent: left to the parser's rules
            if not (text[0].isalnum() or text[0] in _STARTS):
                raise _Unsure  # no statement starts so (`:caption:`, `>>>`, `$ ls`)
            first = i
            indent = pos = len(line) - len(text)
            if not (
                '"' in text
                or "'" in text
                or "#" in text
                or "\\" in text
                or ";" in text
                or "`" in text
            ):  # no string, comment or backslash: the common line, read whole at once
                if (
                    "(" in text
                    or "[" in text
                    or "{" in text
                    or ")" in text
                    or "]" in text
                    or "}" in text
                ):
                    depth = _brackets(text)
                    if depth:
                        if not 0 < depth <= MAX_BRACKETS:
                            raise _Unsure
                        strings, plain, wrapped, opening, closing = 0, False, False, -1, -1
                        continue
                header = text[-1] == ":" or text.rstrip(" ").endswith(":")
                out.append(new(_Line, (i, i, indent, text, header, 0, False, False, -1, -1)))
                first = -1
                continue
            strings, plain, wrapped, opening, closing = 0, True, False, -1, -1
        elif resume >= 0:
            if i < resume:
                continue
            pos = closing
            resume = -1
        else:
            pos = 0
            if string:  # a one-quote string run on with a backslash
                found = _closing(line, string, 0)
                if found < 0:
                    if not _odd_backslashes(line):
                        raise _Unsure
                    continue
                pos = closing = found
                string = ""
            elif joined and (not line.strip(" ") or line.lstrip(" ")[0] == "#"):
                raise _Unsure  # a backslash running on into a blank or comment line
        joined = False
        end = line
        while True:  # the code from pos on, string by string
            found_at = special(line, pos)
            at = cut = found_at.start() if found_at else len(line)
            char = line[at] if found_at else ""
            if char == '"' or char == "'":
                while cut > pos and (line[cut - 1].isalnum() or line[cut - 1] == "_"):
                    cut -= 1  # the string's prefix
            if cut > pos:
                code = line[pos:cut]
                if plain:
                    stripped = code.strip(" ")
                    if stripped:
                        if stripped.strip("()"):
                            plain = False
                        else:
                            wrapped = True
                if (
                    "(" in code
                    or "[" in code
                    or "{" in code
                    or ")" in code
                    or "]" in code
                    or "}" in code
                ):
                    depth += _brackets(code)
                    if not 0 <= depth <= MAX_BRACKETS:
                        raise _Unsure
            if not char:
                break
            if char == "#":
                end = line[:at]
                break
            if char == ";" or char == "`":
                raise _Unsure
            if char == "\\":
                if at != len(line) - 1:
                    raise _Unsure
                joined = True
                end = line[:at]
                break
            letters = line[cut:at].lower()
            if letters not in _PREFIXES:
                raise _Unsure  # `ur""`, or a name run into a quote
            if strings == 0 and i == first:
                opening = cut
            strings += 1
            if "f" in letters or "b" in letters:
                plain = False
            quote = line[at : at + 3]
            if quote != '"""' and quote != "'''":
                quote = char
            closed = _closing(line, quote, at + len(quote))
            if closed >= 0:
                if "f" in letters and _NESTED_QUOTES:
                    _plain_fields(line[at:closed])
                pos = closing = closed
                continue
            if len(quote) == 1:
                if not _odd_backslashes(line):
                    raise _Unsure
                string = quote
            elif "f" in letters and _NESTED_QUOTES:
                raise _Unsure
            elif source is None:
                string = quote
            else:  # a long string: where it ends, found in the whole text at once
                if not offsets:
                    offsets = list(accumulate(map(_AND_NEWLINE, map(len, lines)), initial=0))
                resume, closing = _ends_at(source, offsets, quote, offsets[i] + at + 3)
            end = ""
            break
        if string or depth or joined or resume >= 0:
            continue
        header = end.rstrip(" ").endswith(":")
        out.append(
            new(_Line, (first, i, indent, text, header, strings, plain, wrapped, opening, closing))
        )
        first = -1
    if first >= 0:
        raise _Unsure  # a string, a bracket or a backslash left open at the end
    return out


_AND_NEWLINE = (1).__add__  # a line's length and its newline's


def _ends_at(source: str, offsets: list[int], quote: str, start: int) -> tuple[int, int]:
    """The line where a triple-quoted string opened before `start` ends, and where on it."""
    found = _closing(source, quote, start)
    if found < 0:
        raise _Unsure
    line = bisect_right(offsets, found - 1) - 1
    return line, found - offsets[line]


def _brackets(code: str) -> int:
    return (
        code.count("(")
        + code.count("[")
        + code.count("{")
        - code.count(")")
        - code.count("]")
        - code.count("}")
    )


def _closing(line: str, quote: str, start: int) -> int:
    """Where a string opened before `start` ends on this line (past its quote), or -1: the
    first `quote` not escaped by a backslash (in a raw string too, as the tokenizer reads)."""
    found = line.find(quote, start)
    while found >= 0:
        escapes = found
        while escapes > start and line[escapes - 1] == "\\":
            escapes -= 1
        if (found - escapes) % 2 == 0:
            return found + len(quote)
        found = line.find(quote, found + 1)
    return -1


def _odd_backslashes(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _plain_fields(literal: str) -> None:
    """An f-string read as a plain string is read right unless a field holds a quote, a
    comment or a backslash (Python 3.12 reads those inside the field)."""
    fields = literal.replace("{{", "").replace("}}", "")
    depth = 0
    for char in fields:
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth < 0:
                raise _Unsure
        elif depth and char in "\"'#\\":
            raise _Unsure
    if depth:
        raise _Unsure


class _Frame:
    """An open block: its indent, its statements, and the nodes whose end is its end."""

    __slots__ = ("body", "cases", "indent", "owners")

    def __init__(self, indent: int, body: list[Any], owners: list[Any], cases: bool):
        self.indent = indent
        self.body = body
        self.owners = owners
        self.cases = cases  # a `match` block: only `case` clauses stand in it


def scan(text: str, lines: list[str]) -> ast.Module | None:
    """The module's statements as the parser would place them, or None when unsure
    (`text` is the lines joined)."""
    if "\r" in text or "\f" in text or "\x00" in text or text[:1] == "\ufeff":
        return None
    try:
        return _build(logical_lines(lines, text), lines)
    except _Unsure:
        return None


def _build(logical: list[_Line], lines: list[str]) -> ast.Module:
    module = ast.Module(body=[], type_ignores=[])
    frames = [_Frame(0, module.body, [], False)]
    top = frames[0]
    opened: tuple[list[Any], list[Any], bool] | None = None  # a header's block
    decorated = -1  # the first line of the decorators waiting for their definition
    for line in logical:
        first, last, indent, text, header, strings, plain, _, _, _ = line  # (unpacked: faster)
        if opened is not None:
            if indent <= top.indent or len(frames) > MAX_DEPTH:
                raise _Unsure
            top = _Frame(indent, *opened)
            frames.append(top)
            opened = None
        elif indent != top.indent:
            if indent > top.indent:
                raise _Unsure
            while indent < top.indent:
                _close(frames.pop())
                top = frames[-1]
            if indent > top.indent:
                raise _Unsure
        if header or text.startswith(_OPENERS) or top.cases or decorated >= 0:
            if text[0] == "@":
                if header:
                    raise _Unsure
                if decorated < 0:
                    decorated = first
                continue
            opened = _statement(line, top, decorated, lines)
            decorated = -1
            continue
        if strings and plain:
            top.body.append(_docstring(line, lines))
            continue
        node = Simple()
        node.lineno = first + 1
        node.end_lineno = last + 1
        node.col_offset = indent
        top.body.append(node)
    if opened is not None or decorated >= 0:
        raise _Unsure
    while frames:
        _close(frames.pop())
    return module


# what a line opening a block, joining one or not Python 3's starts with (a prefix of it)
_OPENERS = (
    "@",
    "if",
    "while",
    "for",
    "with",
    "try",
    "def",
    "class",
    "el",
    "except",
    "finally",
    "match",
    "async",
    "print",
    "exec",
)


def _keyword(text: str) -> str:
    word = _WORD.match(text)
    key = word.group() if word else ""
    if key == "async":
        word = _ASYNC.match(text)
        if word is None:
            raise _Unsure
        key = word.group(1)
    return key


def _statement(
    line: _Line, top: _Frame, decorated: int, lines: list[str]
) -> tuple[list[Any], list[Any], bool] | None:
    """A statement that may open a block: what its header opens, if anything."""
    key = _keyword(line.text)
    if decorated >= 0 and key not in ("def", "class"):
        raise _Unsure
    if top.cases:
        if key != "case" or not line.header:
            raise _Unsure
        case = _node(ast.match_case)
        case.body = []
        case.header_end = line.last
        top.body.append(case)
        return case.body, [*top.owners], False
    if key in _CLAUSES:
        return _clause(key, line, top)
    opened: tuple[list[Any], list[Any], bool] | None = None
    if key == "match" and line.header:
        node: Any = _node(ast.Match)
        node.cases = []
        opened = (node.cases, [node], True)
        node.header_end = line.last
    elif key in _COMPOUND:
        node = _node(_KINDS[key])
        node.body = []
        if key in ("if", "while", "for"):
            node.orelse = []
        elif key == "try":
            node.handlers, node.orelse, node.finalbody = [], [], []
            node.clauses = []
        if key == "if":
            node.chain = [node]
        node.done = False
        node.header_end = line.last
        if line.header:
            opened = (node.body, [node], False)
        else:
            _inline(node, node.body, line)
        if decorated >= 0:
            node.decorator_list = [_decorator(decorated + 1)]
    elif line.header:
        raise _Unsure  # a line ending in `:` that opens no block Python knows
    else:
        if key == "print" or key == "exec":
            _python2(line.text, len(key))
        if line.strings and line.plain:
            top.body.append(_docstring(line, lines))
            return None
        node = Simple()
        node.end_lineno = line.last + 1
    node.lineno = line.first + 1
    node.col_offset = line.indent
    top.body.append(node)
    return opened


def _docstring(line: _Line, lines: list[str]) -> Any:
    """A statement that is a string alone, placed as the parser places it."""
    if line.wrapped or line.opening < 0:
        raise _Unsure  # `("a string")`: where the parser places it is not plain
    node = _node(ast.Expr)
    node.value = _STRING
    node.lineno = line.first + 1
    node.end_lineno = line.last + 1
    node.col_offset = len(lines[line.first][: line.opening].encode())
    node.end_col_offset = len(lines[line.last][: line.closing].encode())
    return node


def _node(kind: type[ast.AST]) -> Any:
    """A node of the parser's class, its fields set by the scanner as it reads on."""
    return kind()


def _decorator(lineno: int) -> Any:
    """Where a definition's decorators start: all the plan asks of them."""
    node = _node(ast.Name)
    node.lineno = lineno
    return node


def _close(frame: _Frame) -> None:
    if not frame.body:
        return
    last = frame.body[-1]
    end = getattr(last, "end_lineno", None)
    if end is None:  # a `case`, whose block closed before it
        end = last.body[-1].end_lineno if last.body else None
    for owner in frame.owners:
        owner.end_lineno = end


def _clause(key: str, line: _Line, top: _Frame) -> tuple[list[Any], list[Any], bool] | None:
    """An `elif`, `else`, `except` or `finally` joining the compound statement before it."""
    if not top.body:
        raise _Unsure
    node = top.body[-1]
    kind = type(node)  # (not narrowed: the nodes carry the scanner's own fields)
    if kind is ast.If:
        tail = node.chain[-1]
        if key == "elif" and not tail.done:
            inner = _node(ast.If)
            inner.body, inner.orelse, inner.done = [], [], False
            inner.lineno, inner.col_offset, inner.header_end = (
                line.first + 1,
                line.indent,
                line.last,
            )
            tail.orelse = [inner]
            tail.done = True
            node.chain.append(inner)
            return _open(inner.body, [*node.chain], line)
        if key == "else" and not tail.done:
            tail.done = True
            return _open(tail.orelse, [*node.chain], line)
    elif kind is ast.While and key == "else" and not node.done:
        node.done = True
        return _open(node.orelse, [node], line)
    elif kind is ast.Try and key in _TRY_CLAUSES:
        seen = node.clauses
        if key == "except" and not ({"else", "finally"} & set(seen)):
            handler = _node(ast.ExceptHandler)
            handler.body = []
            handler.lineno, handler.col_offset = line.first + 1, line.indent
            handler.header_end = line.last
            node.handlers.append(handler)
            seen.append(key)
            return _open(handler.body, [handler, node], line)
        if key == "else" and seen and seen[-1] == "except":
            seen.append(key)
            return _open(node.orelse, [node], line)
        if key == "finally" and "finally" not in seen:
            seen.append(key)
            return _open(node.finalbody, [node], line)
    raise _Unsure


def _open(
    body: list[Any], owners: list[Any], line: _Line
) -> tuple[list[Any], list[Any], bool] | None:
    if line.header:
        return body, owners, False
    _inline(owners[0], body, line)
    for owner in owners:
        owner.end_lineno = line.last + 1
    return None


def _inline(node: Any, body: list[Any], line: _Line) -> None:
    """A body on its header's line (`if x: return`): one statement, on one line, not led
    by a string (which may be a docstring)."""
    text = line.text
    colon = _header_colon(text) if line.strings else text.find(":")
    if line.last != line.first or colon < 0:
        raise _Unsure
    if line.strings:
        rest = text[colon + 1 :].lstrip(" ")
        letters = len(rest) - len(rest.lstrip("rRuUbBfF"))
        if rest[letters : letters + 1] in ('"', "'"):
            raise _Unsure
    statement = Simple()
    statement.lineno = statement.end_lineno = line.first + 1
    statement.col_offset = line.indent + colon + 1  # past the header
    body.append(statement)
    node.end_lineno = line.last + 1


def _header_colon(text: str) -> int:
    """Where the header of a line holding its body ends: its first colon outside strings
    and brackets that is not a `:=`; -1 where there is none."""
    depth = pos = 0
    while True:
        found = _COLON.search(text, pos)
        if found is None:
            return -1
        at = found.start()
        char = text[at]
        pos = at + 1
        if char == ":":
            if not depth and text[pos : pos + 1] != "=":
                return at
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        else:
            quote = text[at : at + 3] if text[at : at + 3] in ('"""', "'''") else char
            pos = _closing(text, quote, at + len(quote))
            if pos < 0:
                return -1


def _python2(text: str, length: int) -> None:
    """`print x` and `exec code` are Python 2: the parser rejects them."""
    rest = text[length:]
    if rest[:1] == " " and (rest.lstrip(" ")[:1].isalnum() or rest.lstrip(" ")[:1] in "\"'"):
        raise _Unsure
