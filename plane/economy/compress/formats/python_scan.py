"""Python's statements read from its lines, without the parser: the tree the plan needs.

The fold plan needs the statements of each block (where each starts and
ends), which are classes and functions, and which open with a docstring.
Parsing a 100 KB file for that cost more than the rest of `plane compress`
together, building a node for every name and constant. Statements are
plainer: a line scanner that knows strings, comments, brackets and
backslashes finds the logical lines, and their indentation finds the blocks.

The scanner answers only where it is sure: any line it cannot read as
Python reads it (a tab or form feed in an indent, CR, a BOM, a `;`, an
inline body holding a string, an unclosed string or bracket, an indent that
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

from plane.economy.compress.patterns import lazy

MAX_DEPTH = 100  # blocks deeper than this are left to the parser
_SPECIAL = lazy(r"[\"'#\\;`]")  # what can hide a line's structure from str methods
_WORD = lazy(r"[A-Za-z_]\w*")
_ASYNC = lazy(r"async +(def|for|with)\b")
_PREFIXES = frozenset({"", "r", "u", "b", "f", "br", "rb", "fr", "rf"})
_ENDS = {
    '"': lazy(r'[^"\\]*(?:\\.[^"\\]*)*"'),
    "'": lazy(r"[^'\\]*(?:\\.[^'\\]*)*'"),
    '"""': lazy(r'[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'),
    "'''": lazy(r"[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"),
}
_NESTED_QUOTES = sys.version_info >= (3, 12)  # an f-string's fields may hold its own quote
_COMPOUND = frozenset({"if", "while", "for", "with", "try", "def", "class"})
_CLAUSES = frozenset({"elif", "else", "except", "finally"})
_TRY_CLAUSES = ("except", "else", "finally")


class Unsure(Exception):
    """The lines are not plainly Python: let the parser read them."""


class _Doc(ast.Expr):
    """A statement that is a string alone (a docstring where it opens a block)."""


class _Simple(ast.Pass):
    """Any other simple statement: the plan needs only where it stands."""


class _Def(ast.FunctionDef):
    pass


class _Class(ast.ClassDef):
    pass


class _If(ast.If):
    pass


class _Loop(ast.While):  # `for` and `while`: a body and an `else`
    pass


class _With(ast.With):
    pass


class _Try(ast.Try):
    pass


class _Handler(ast.ExceptHandler):
    pass


class _Match(ast.Match):
    pass


class _Case(ast.match_case):
    pass


class _Decorator(ast.Name):
    pass


_KINDS: dict[str, type[ast.stmt]] = {
    "if": _If,
    "while": _Loop,
    "for": _Loop,
    "with": _With,
    "try": _Try,
    "def": _Def,
    "class": _Class,
}
_STRING = ast.Constant(value="")


class _Line:
    """One logical line: its physical lines [first, last], indent, and what it holds."""

    __slots__ = (
        "first", "last", "indent", "text", "header", "strings", "plain", "wrapped", "opening",
        "closing",
    )

    def __init__(self, first: int, indent: int, text: str) -> None:
        self.first = first
        self.last = first
        self.indent = indent
        self.text = text  # the first physical line from its indent on
        self.header = False  # its code ends with `:`
        self.strings = 0  # string tokens in it
        self.plain = True  # nothing but strings (no f or b prefix), blanks and backslashes
        self.wrapped = False  # it has brackets and nothing else beside its strings
        self.opening = -1  # where its first string opens on its first line
        self.closing = -1  # where its last string closes on its last line


def logical_lines(lines: list[str]) -> list[_Line]:
    """The logical lines, comment and blank lines left out; `Unsure` where not plain."""
    out: list[_Line] = []
    special = _SPECIAL.search
    depth = 0  # open brackets
    string = ""  # the quote of a string still open at the end of the previous line
    joined = False  # the previous line ended in a backslash (outside a string)
    current: _Line | None = None
    for i, line in enumerate(lines):
        if current is None:
            text = line.lstrip(" ")
            if not text or text[0] == "#":
                continue
            if text[0] == "\t":
                if not text.strip(" \t") or text.lstrip(" \t")[0] == "#":
                    continue
                raise Unsure  # a tab in an indent: left to the parser's rules
            indent = len(line) - len(text)
            current = _Line(i, indent, text)
            pos = indent
        else:
            current.last = i
            pos = 0
            if string:
                found = _ENDS[string].match(line)
                if found is None:
                    if len(string) == 1 and not _odd_backslashes(line):
                        raise Unsure
                    continue
                pos = current.closing = found.end()
                string = ""
            elif joined and (not line.strip(" ") or line.lstrip(" ")[0] == "#"):
                raise Unsure  # a backslash running on into a blank or comment line
        joined = False
        # the code from pos on, outside strings
        while True:
            found = special(line, pos)
            at = cut = found.start() if found else len(line)
            char = line[at] if found else ""
            if char == '"' or char == "'":
                while cut > pos and (line[cut - 1].isalnum() or line[cut - 1] == "_"):
                    cut -= 1  # the string's prefix
            code = line[pos:cut]
            stripped = code.strip(" ")
            if stripped:
                if stripped.strip("()"):
                    current.plain = False
                else:
                    current.wrapped = True
                if "(" in code or ")" in code or "[" in code or "]" in code or "{" in code or "}" in code:
                    depth += _brackets(code)
                    if depth < 0:
                        raise Unsure
            if found is None:
                end = line
                break
            if char == "#":
                end = line[:at]
                break
            if char in ";`":
                raise Unsure
            if char == "\\":
                if at != len(line) - 1:
                    raise Unsure
                joined = True
                end = line[:at]
                break
            letters = line[cut:at].lower()
            if letters not in _PREFIXES:
                raise Unsure  # `ur""`, or a name run into a quote
            if current.strings == 0 and i == current.first:
                current.opening = cut
            current.strings += 1
            if "f" in letters or "b" in letters:
                current.plain = False
            quote = line[at : at + 3]
            if quote not in ('"""', "'''"):
                quote = char
            closing = _ENDS[quote].match(line, at + len(quote))
            if closing is None:
                if (len(quote) == 1 and not _odd_backslashes(line)) or (
                    "f" in letters and _NESTED_QUOTES
                ):
                    raise Unsure
                string = quote
                end = ""
                break
            if "f" in letters and _NESTED_QUOTES:
                _plain_fields(line[at : closing.end()])
            pos = current.closing = closing.end()
        if string or depth or joined:
            continue
        if "\r" in end:
            raise Unsure
        current.header = end.rstrip(" ").endswith(":")
        out.append(current)
        current = None
    if current is not None:
        raise Unsure  # a string, a bracket or a backslash left open at the end
    return out


def _brackets(code: str) -> int:
    return (
        code.count("(")
        + code.count("[")
        + code.count("{")
        - code.count(")")
        - code.count("]")
        - code.count("}")
    )


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
                raise Unsure
        elif depth and char in "\"'#\\":
            raise Unsure
    if depth:
        raise Unsure


class _Frame:
    """An open block: its indent, its statements, and the nodes whose end is its end."""

    __slots__ = ("indent", "body", "owners", "cases")

    def __init__(self, indent: int, body: list[ast.AST], owners: list[ast.AST], cases: bool):
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
        return _build(logical_lines(lines), lines)
    except Unsure:
        return None


def _build(logical: list[_Line], lines: list[str]) -> ast.Module:
    module = ast.Module(body=[], type_ignores=[])
    frames = [_Frame(0, module.body, [], False)]
    top = frames[0]
    opened: tuple[list[ast.AST], list[ast.AST], bool] | None = None  # a header's block
    decorated = -1  # the first line of the decorators waiting for their definition
    for line in logical:
        indent = line.indent
        if opened is not None:
            if indent <= top.indent or len(frames) > MAX_DEPTH:
                raise Unsure
            top = _Frame(indent, *opened)
            frames.append(top)
            opened = None
        elif indent != top.indent:
            if indent > top.indent:
                raise Unsure
            while indent < top.indent:
                _close(frames.pop())
                top = frames[-1]
            if indent > top.indent:
                raise Unsure
        text = line.text
        if line.header or text.startswith(_OPENERS) or top.cases or decorated >= 0:
            if text[0] == "@":
                if line.header:
                    raise Unsure
                if decorated < 0:
                    decorated = line.first
                continue
            opened = _statement(line, top, decorated, lines)
            decorated = -1
            continue
        if line.strings and line.plain:
            top.body.append(_docstring(line, lines))
            continue
        node = _Simple()
        node.lineno = line.first + 1
        node.end_lineno = line.last + 1
        node.col_offset = indent
        top.body.append(node)
    if opened is not None or decorated >= 0:
        raise Unsure
    while frames:
        _close(frames.pop())
    return module


# what a line opening a block, joining one or not Python 3's starts with (a prefix of it)
_OPENERS = (
    "@", "if", "while", "for", "with", "try", "def", "class", "el", "except", "finally",
    "match", "async", "print", "exec",
)


def _keyword(text: str) -> str:
    word = _WORD.match(text)
    key = word.group() if word else ""
    if key == "async":
        word = _ASYNC.match(text)
        if word is None:
            raise Unsure
        key = word.group(1)
    return key


def _statement(
    line: _Line, top: _Frame, decorated: int, lines: list[str]
) -> tuple[list[ast.AST], list[ast.AST], bool] | None:
    """A statement that may open a block: what its header opens, if anything."""
    key = _keyword(line.text)
    if decorated >= 0 and key not in ("def", "class"):
        raise Unsure
    if top.cases:
        if key != "case" or not line.header:
            raise Unsure
        case = _Case()
        case.body = []
        case.header_end = line.last
        top.body.append(case)
        return case.body, [*top.owners], False
    if key in _CLAUSES:
        return _clause(key, line, top)
    opened: tuple[list[ast.AST], list[ast.AST], bool] | None = None
    if key == "match" and line.header:
        node: ast.AST = _Match()
        node.cases = []
        opened = (node.cases, [node], True)
    elif key in _COMPOUND:
        node = _KINDS[key]()
        node.body = []
        if key in ("if", "while", "for"):
            node.orelse = []
        elif key == "try":
            node.handlers, node.orelse, node.finalbody = [], [], []
            node.clauses = []
        if key == "if":
            node.chain = [node]
        node.done = False
        if line.header:
            opened = (node.body, [node], False)
        else:
            _inline(node, node.body, line)
        if decorated >= 0:
            node.decorator_list = [_Decorator(lineno=decorated + 1)]
    elif line.header:
        raise Unsure  # a line ending in `:` that opens no block Python knows
    else:
        if key == "print" or key == "exec":
            _python2(line.text, len(key))
        if line.strings and line.plain:
            top.body.append(_docstring(line, lines))
            return None
        node = _Simple()
        node.end_lineno = line.last + 1
    node.lineno = line.first + 1
    node.col_offset = line.indent
    node.header_end = line.last
    top.body.append(node)
    return opened


def _docstring(line: _Line, lines: list[str]) -> ast.Expr:
    """A statement that is a string alone, placed as the parser places it."""
    if line.wrapped or line.opening < 0:
        raise Unsure  # `("a string")`: where the parser places it is not plain
    node = _Doc()
    node.value = _STRING
    node.lineno = line.first + 1
    node.end_lineno = line.last + 1
    node.col_offset = len(lines[line.first][: line.opening].encode())
    node.end_col_offset = len(lines[line.last][: line.closing].encode())
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


def _clause(
    key: str, line: _Line, top: _Frame
) -> tuple[list[ast.AST], list[ast.AST], bool] | None:
    """An `elif`, `else`, `except` or `finally` joining the compound statement before it."""
    if not top.body:
        raise Unsure
    node = top.body[-1]
    if isinstance(node, _If):
        tail = node.chain[-1]
        if key == "elif" and not tail.done:
            inner = _If()
            inner.body, inner.orelse, inner.done = [], [], False
            inner.lineno, inner.col_offset, inner.header_end = line.first + 1, line.indent, line.last
            tail.orelse = [inner]
            tail.done = True
            node.chain.append(inner)
            return _open(inner.body, [*node.chain], line)
        if key == "else" and not tail.done:
            tail.done = True
            return _open(tail.orelse, [*node.chain], line)
    elif isinstance(node, _Loop) and key == "else" and not node.done:
        node.done = True
        return _open(node.orelse, [node], line)
    elif isinstance(node, _Try) and key in _TRY_CLAUSES:
        seen = node.clauses
        if key == "except" and not ({"else", "finally"} & set(seen)):
            handler = _Handler()
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
    raise Unsure


def _open(
    body: list[ast.AST], owners: list[ast.AST], line: _Line
) -> tuple[list[ast.AST], list[ast.AST], bool] | None:
    if line.header:
        return body, owners, False
    _inline(owners[0], body, line)
    for owner in owners:
        owner.end_lineno = line.last + 1
    return None


def _inline(node: ast.AST, body: list[ast.AST], line: _Line) -> None:
    """A body on its header's line (`if x: return`): one statement, on one line, no string."""
    if line.last != line.first or line.strings or ":" not in line.text:
        raise Unsure
    statement = _Simple()
    statement.lineno = statement.end_lineno = line.first + 1
    statement.col_offset = line.indent + line.text.find(":") + 1  # past the header
    body.append(statement)
    node.end_lineno = line.last + 1


def _python2(text: str, length: int) -> None:
    """`print x` and `exec code` are Python 2: the parser rejects them."""
    rest = text[length:]
    if rest[:1] == " " and (rest.lstrip(" ")[:1].isalnum() or rest.lstrip(" ")[:1] in "\"'"):
        raise Unsure
