"""Python bodies elided along the syntax tree; the result is valid Python, or not used.

The tree is read from the lines by `python_scan` (its statements, not every name and
constant: a 100 KB file's parse cost more than the rest of the call); where the scanner
is not sure of a line, the file is parsed. Text the scanner reads as statements though
the parser would reject it (`x = = 1`) is folded as the statements it holds.
"""

from __future__ import annotations

import _ast as ast
import re

from plane.economy.compress.formats import python_scan, python_shape
from plane.economy.compress.plan import Fold, Plan, render
from plane.economy.compress.salience import novel_error_lines

MIN_BODY = 3  # bodies this short are the signature's own explanation
DOCSTRING_KEPT = 2  # the opening line and the summary under it
PYTHONIC = r"^\s*(?:def |class |import |from \S+ import |async def |@\w)"
"""A line that opens Python: what `pythonic` tells, without compiling it."""
_PYTHONIC_STARTS = ("def ", "class ", "import ", "async def ")


def parse(text: str) -> ast.Module:
    """`ast.parse(text)`, from the parser's own module: `ast.py` is helpers around it (a
    visitor, an unparser) whose import cost a `plane compress` call more than a millisecond."""
    tree = compile(text, "<unknown>", "exec", ast.PyCF_ONLY_AST)
    assert isinstance(tree, ast.Module)
    return tree


def looks_python(lines: list[str], command: str | None) -> bool:
    if command and re.search(r"\.pyi?\b", command):
        return True
    hits = sum(1 for line in lines[:400] if pythonic(line))
    return hits >= 3


def pythonic(line: str) -> bool:
    """Whether `PYTHONIC` matches the line, told by string methods: compiling the pattern
    cost a call more than matching it on a module's first 400 lines. (`\\s` is what
    `str.isspace` is, and `\\w` what `str.isalnum` is, or `_`.)"""
    code = line.lstrip()
    if code.startswith(_PYTHONIC_STARTS):
        return True
    if code.startswith("@"):
        return code[1:2].isalnum() or code[1:2] == "_"
    rest = code[5:]
    if not code.startswith("from ") or not rest or rest[0].isspace():
        return False
    return rest.startswith(" import ", len(rest.split(None, 1)[0]))  # `from \S+ import `


def compress(lines: list[str]) -> Plan | None:
    """A plan eliding long function bodies, or None when the text is not valid Python."""
    text = "\n".join(lines)
    tree = python_scan.scan(text, lines)
    if tree is None:  # not plainly Python to the line scanner: the parser decides
        try:
            tree = parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    plan = Plan(lines, comment="...  # ")
    flagged = novel_error_lines(lines)
    _trim_docstring(plan, tree, flagged)
    for node in _definitions(tree):
        if not isinstance(node, ast.ClassDef):
            _elide(plan, node, lines, flagged)
        _trim_docstring(plan, node, flagged)
    plan.folds = _outermost(plan.folds)
    _fold_comments(plan, tree)
    if not (python_shape.still_parses(plan, tree) or _still_parses(plan)):
        return None
    return plan


_Definition = ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
_NESTED = ("body", "orelse", "finalbody", "handlers", "cases")
_NESTED_IN: dict[type, tuple[str, ...]] = {}


def _nested(kind: type) -> tuple[str, ...]:
    """The statement lists a kind of node has (most have none: `x = 1`, `return x`), in
    `_NESTED`'s order, worked out once a kind rather than asked of every node."""
    names = _NESTED_IN.get(kind)
    if names is None:
        fields = getattr(kind, "_fields", ())
        names = _NESTED_IN[kind] = tuple(name for name in _NESTED if name in fields)
    return names


def _definitions(tree: ast.Module) -> list[ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every class and function in the tree. Definitions are statements, so only statement
    lists are read, never expressions: `ast.walk` visiting every name and constant cost a
    20 KB file as much as parsing it did."""
    found: list[ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef] = []
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, _Definition):
            found.append(node)
        for name in _nested(type(node)):
            nested = getattr(node, name, None)
            if nested:
                pending.extend(nested)
    return found


def _elide(
    plan: Plan, node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str], flagged: list[bool]
) -> None:
    """Fold a long body statement by statement (errors keep their statement, nested)."""
    body = list(node.body)
    if _is_docstring(body[0]):
        body = body[1:]
    if not body:
        return
    first = _first_line(body[0])
    while first - 1 > node.lineno - 1 and lines[first - 1].strip().startswith("#"):
        first -= 1  # a comment leading the first statement goes with it
    end = node.end_lineno or 0
    if end - first < MIN_BODY or body[0].lineno - 1 < first:
        return
    # the elided lines must start a line of their own (not `def f(): return 1`)
    if lines[body[0].lineno - 1][: body[0].col_offset].strip():
        return
    _fold_body(plan, body, first, end, flagged)


def _fold_body(plan: Plan, body: list[ast.stmt], first: int, end: int, flagged: list[bool]) -> None:
    starts = [first] + [_first_line(stmt) for stmt in body[1:]]
    for stmt, a, b in zip(body, starts, [*starts[1:], end], strict=True):
        if not any(flagged[a:b]):
            plan.fold(a, b, "body", atomic=True)
            continue
        for inner in _sub_bodies(stmt):
            head = inner[0].lineno - 1
            if head > _first_line(stmt) and inner[-1].end_lineno:
                _fold_body(plan, inner, head, inner[-1].end_lineno, flagged)


def _sub_bodies(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists nested in a compound statement (if/for/while/with/try…)."""
    found = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(stmt, name, None)
        if isinstance(value, list) and value and isinstance(value[0], python_scan.STATEMENT):
            found.append(value)
    for handler in getattr(stmt, "handlers", []):
        found.append(handler.body)
    return found


def _trim_docstring(plan: Plan, node: ast.AST, flagged: list[bool]) -> None:
    """A long docstring keeps its summary line and its closing quotes; the middle folds."""
    body = getattr(node, "body", None)
    if not body or not _is_docstring(body[0]):
        return
    start, end = body[0].lineno - 1, (body[0].end_lineno or 0) - 1
    if end - start > DOCSTRING_KEPT + 2:
        # lines inside a string: the guard may reopen an error line and split the fold
        plan.fold(start + DOCSTRING_KEPT, end, "docstring", atomic=not any(flagged[start:end]))


COMMENT_MIN = 3


def _comment_indent(line: str) -> str | None:
    """The indent of a comment line (`^([ \\t]*)#`'s group), None for any other line."""
    code = line.lstrip(" \t")
    return line[: len(line) - len(code)] if code.startswith("#") else None


def _fold_comments(plan: Plan, tree: ast.Module) -> None:
    """A long comment block before a statement keeps its first line; the rest folds. Only
    where a statement may stand (the marker is `...`): the comment's indent is that of the
    statement it leads, never inside brackets or before an `else:`."""
    starts: dict[int, int] | None = None  # walked only once a long block is found
    lines = plan.lines
    folded = plan.folded_mask()
    i = 0
    while i < len(lines):
        indent = None if folded[i] or "#" not in lines[i] else _comment_indent(lines[i])
        if indent is None:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not folded[j]:
            if _comment_indent(lines[j]) != indent:
                break
            j += 1
        if j - i - 1 >= COMMENT_MIN and starts is None:
            starts = _statement_starts(tree)
        if (
            j - i - 1 >= COMMENT_MIN
            and starts is not None
            and starts.get(j) == len(indent)
            and not lines[j].lstrip().startswith("elif")  # an `if` in an `else`, no statement
        ):
            plan.fold(i + 1, j, "comments")
        i = j


def _statement_starts(tree: ast.Module) -> dict[int, int]:
    """Line index → column of every statement's first line (its decorators' first)."""
    found: dict[int, int] = {}
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, python_scan.STATEMENT):
            found.setdefault(_first_line(node), node.col_offset)
        for name in _nested(type(node)):
            nested = getattr(node, name, None)
            if nested:
                pending.extend(nested)
    return found


def _first_line(stmt: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(stmt, "decorator_list", [])
    if decorators:
        return min(stmt.lineno, *(d.lineno for d in decorators)) - 1
    return stmt.lineno - 1


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _outermost(folds: list[Fold]) -> list[Fold]:
    """Folds of nested functions fall inside their parent's folds: keep the outer ones."""
    out: list[Fold] = []
    covered: list[tuple[int, int]] = []
    for f in sorted(folds, key=lambda f: (f.start, -f.end)):
        if covered and covered[-1][0] <= f.start and f.end <= covered[-1][1]:
            continue
        out.append(f)
        covered.append((f.start, f.end))
    return out


def _still_parses(plan: Plan) -> bool:
    """The result parsed: for a plan whose folds' shapes do not prove it (see python_shape)."""
    text, _ = render(plan)
    try:
        parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
