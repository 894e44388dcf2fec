"""Python bodies elided along the syntax tree, and the result parsed again to be sure."""

from __future__ import annotations

import ast
import re

from plane.economy.compress.plan import Fold, Plan, render

MIN_BODY = 6  # bodies this short are the signature's own explanation
_PYTHONIC = re.compile(r"^\s*(?:def |class |import |from \S+ import |async def |@\w)")


def looks_python(lines: list[str], command: str | None) -> bool:
    if command and re.search(r"\.pyi?\b", command):
        return True
    hits = sum(1 for line in lines[:400] if _PYTHONIC.match(line))
    return hits >= 3


def compress(lines: list[str]) -> Plan | None:
    """A plan eliding long function bodies, or None when the text is not valid Python."""
    text = "\n".join(lines)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    plan = Plan(lines, comment="...  # ")
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            _elide(plan, node, lines)
    plan.folds = _outermost(plan.folds)
    if not _still_parses(plan):
        return None
    return plan


def _elide(plan: Plan, node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> None:
    """Fold a long body statement by statement, so the guard can keep one whole statement."""
    body = list(node.body)
    if _is_docstring(body[0]):
        body = body[1:]
    if not body:
        return
    end = node.end_lineno or 0
    starts = [_first_line(stmt) for stmt in body]
    if starts[0] <= node.lineno - 1 or end - starts[0] < MIN_BODY:
        return
    # the elided lines must start a line of their own (not `def f(): return 1`)
    if lines[starts[0]][: body[0].col_offset].strip():
        return
    for a, b in zip(starts, [*starts[1:], end], strict=True):
        plan.fold(a, b, "body", atomic=True)


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
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
    text, _ = render(plan)
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True
