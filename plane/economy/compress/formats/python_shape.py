"""Whether a Python plan's markers leave valid Python, told from the tree already parsed.

Python source is compressed only if the result still parses. Parsing the
result again cost a 100 KB file a third of its parse, yet the plan's folds
have three shapes whose result is valid by construction, and the tree of the
input says whether a fold has one:

- statements of a block, whole, with the comments around them (and, when the
  block ends inside the fold, the statements after it in the blocks around
  it): the marker line `...  # […]` is a statement at the block's indent in
  their place;
- comment lines just before a statement, at its indent: the marker is one
  statement more before it;
- lines inside one triple-quoted docstring: the marker is text inside it.

A fold of any other shape (statements sharing a line, a line running on into
the fold, a comment-like line that may sit in a string) proves nothing, and
the caller parses the result as before: this spares a parse whose answer is
known, and never turns an answer around.
"""

from __future__ import annotations

import _ast as ast  # the node classes alone: see source_python
from bisect import bisect_left
from operator import attrgetter

from plane.economy.compress.formats.python_scan import STATEMENT
from plane.economy.compress.plan import Fold, Plan

_STRING_PREFIXES = "rRuU"
_END = attrgetter("end_lineno")
_Owner = ast.AST | None  # what holds a statement list: a statement, a clause, or the module


class _Tree:
    """The input's statements, looked up by line: each lookup walks down from the module
    through the one statement that holds the line, halving each block (a plan's folds
    touch few of a file's statements; indexing them all cost more than a parse)."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree

    def starting(self, line: int) -> tuple[_Owner, list[ast.stmt], int] | None:
        """The outermost statement whose first line (its decorators') is `line`: what
        holds its block, the block, and its index there."""
        owner: _Owner = None
        body = self.tree.body
        while body:
            k = bisect_left(body, line + 1, key=_END)  # the first statement ending on or after
            if k == len(body):
                return None
            stmt = body[k]
            first = _first_line(stmt)
            if first >= line:
                return (owner, body, k) if first == line else None
            found = _block_holding(stmt, line)
            if found is None:
                return None
            owner, body = found
        return None

    def docstring_holding(self, line: int) -> ast.Expr | None:
        """The string statement opening a block whose lines hold `line` past its first."""
        body = self.tree.body
        while body:
            k = bisect_left(body, line + 1, key=_END)
            if k == len(body) or _first_line(body[k]) > line:
                return None
            stmt = body[k]
            if k == 0 and isinstance(stmt, ast.Expr) and _is_string(stmt.value):
                return stmt if stmt.lineno - 1 < line else None
            found = _block_holding(stmt, line)
            if found is None:
                return None
            body = found[1]
        return None


def _block_holding(stmt: ast.stmt, line: int) -> tuple[_Owner, list[ast.stmt]] | None:
    if _last_line(stmt) < line:
        return None
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if block and isinstance(block[0], STATEMENT) and _spans(block, line):
            return stmt, block
    for name in ("handlers", "cases"):
        for clause in getattr(stmt, name, ()):
            if _spans(clause.body, line):
                return clause, clause.body
    return None


def _spans(block: list[ast.stmt], line: int) -> bool:
    return _first_line(block[0]) <= line <= _last_line(block[-1])


def still_parses(plan: Plan, tree: ast.Module) -> bool:
    """True when every marker the plan renders leaves valid Python; False when that is
    not certain (then parse the result to know)."""
    at = _Tree(tree)
    lines = plan.lines
    for fold in plan.merged():
        if fold.parts or (fold.start and lines[fold.start - 1].rstrip().endswith("\\")):
            return False  # (the line before runs on into the fold)
        if fold.kind == "docstring":
            if not _inside_a_docstring(fold, lines, at):
                return False
        elif not (
            _whole_statements(fold, lines, at) or _comments_before_a_statement(fold, lines, at)
        ):
            return False
    return True


def _whole_statements(fold: Fold, lines: list[str], at: _Tree) -> bool:
    """Comments, statements of a block from its k-th on, then comments; past the block's
    end, more of the same in the blocks around it. Nothing else."""
    indent = _marker_indent(lines[fold.start : fold.end])
    i = _past_comments(lines, fold.start, fold.end)
    found = at.starting(i) if i < fold.end else None
    if found is None or not _leads(lines[i], indent, found[1][found[2]]):
        return False
    owner, body, k = found
    if i > fold.start and not _opens_after(owner, body, k, fold.start):
        return False  # (with no comment-like line before it, the statement opens the fold)
    while True:
        m = bisect_left(body, fold.end + 1, lo=k, key=_END)  # the first reaching past the fold
        if m == k or (m < len(body) and _first_line(body[m]) < fold.end):
            return False  # a statement reaches past the fold
        i = _past_comments(lines, _last_line(body[m - 1]) + 1, fold.end)
        if i == fold.end:
            return True
        found = at.starting(i) if m == len(body) else None
        if found is None or not _leads(lines[i], _indent(lines[i]), found[1][found[2]]):
            return False
        owner, body, k = found  # the block ended: statements of a block around it go on
        if not (k and _last_line(body[k - 1]) < i):
            return False


def _comments_before_a_statement(fold: Fold, lines: list[str], at: _Tree) -> bool:
    """Comment lines at the indent of the statement that starts the line after them."""
    if fold.end >= len(lines) or _past_comments(lines, fold.start, fold.end) != fold.end:
        return False
    if lines[fold.end].lstrip().startswith("elif"):
        return False  # no block's statement: a marker before it would end the `if`
    found = at.starting(fold.end)
    indent = _marker_indent(lines[fold.start : fold.end])
    if found is None or not _leads(lines[fold.end], indent, found[1][found[2]]):
        return False
    return _opens_after(*found, fold.start)


def _opens_after(owner: _Owner, body: list[ast.stmt], k: int, start: int) -> bool:
    """The k-th statement of the block is the first thing after line `start` opens: the
    statement before it, or the block's header, ends before that line (so that the
    comment-like lines between are comments, not lines of a string or a bracket)."""
    if k:
        return _last_line(body[k - 1]) < start
    return owner is None or _header_end(owner) < start


_BLOCKS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


def _header_end(node: ast.AST) -> int:
    """The last line of what a block's header holds (a test, arguments, decorators…);
    past it the header has only brackets, an arrow and its colon, none of which can
    open a string. A header read by the line scanner (`python_scan`) knows its last line,
    its colon's: a line later than the tree's at most, which proves less, never more."""
    scanned: int | None = getattr(node, "header_end", None)
    if scanned is not None:
        return scanned
    end = getattr(node, "lineno", 1) - 1
    for name in node._fields:
        if name in _BLOCKS:
            continue
        value = getattr(node, name, None)
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                last = getattr(child, "end_lineno", None)
                end = max(end, last - 1 if last is not None else _header_end(child))
    return end


def _inside_a_docstring(fold: Fold, lines: list[str], at: _Tree) -> bool:
    """Lines strictly inside one triple-quoted string that opens a block, the marker
    being text without quotes or backslashes."""
    node = at.docstring_holding(fold.start)
    if node is None:
        return False
    first, last = node.lineno - 1, _last_line(node)
    if fold.end > last:
        return False
    opening = lines[first].encode()[node.col_offset :].decode().lstrip(_STRING_PREFIXES)
    quote = opening[:3]
    if quote not in ('"""', "'''"):
        return False
    closing = lines[last].encode()[: node.end_col_offset or 0].decode()
    segment = "\n".join([opening, *lines[first + 1 : last], closing])
    return segment.endswith(quote) and segment.count(quote) == 2


def _past_comments(lines: list[str], start: int, end: int) -> int:
    """The first line of [start, end) that is neither blank nor a comment."""
    i = start
    while i < end:
        text = lines[i].lstrip()
        if text and text[0] != "#":
            break
        i += 1
    return i


def _leads(line: str, indent: str, stmt: ast.stmt) -> bool:
    """The statement starting on this line starts it, at exactly this indent (a decorated
    one with its `@`)."""
    if not line.startswith(indent):
        return False
    rest = line[len(indent) :]
    if getattr(stmt, "decorator_list", None):
        return rest.startswith("@")
    return stmt.col_offset == len(indent) and rest[:1] not in (" ", "\t")


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _marker_indent(removed: list[str]) -> str:
    """The indent the renderer gives the marker: its first line's with text."""
    return _indent(next((line for line in removed if line.strip()), ""))


def _first_line(stmt: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(stmt, "decorator_list", [])
    if decorators:
        return min(stmt.lineno, *(d.lineno for d in decorators)) - 1
    return stmt.lineno - 1


def _last_line(stmt: ast.stmt) -> int:
    return (stmt.end_lineno or stmt.lineno) - 1


def _is_string(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)
