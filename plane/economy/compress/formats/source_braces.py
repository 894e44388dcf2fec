"""Brace languages (C, C++, Java, C#, JS/TS, Go, Rust): long function bodies elided.

Blocks are found by brace depth with strings, characters and comments
skipped. A block is a function when its header looks like a call or a
declaration with parameters (`name(…) {`, `fn name(…) -> T {`, `=> {`) and
not a control statement; a container (class, struct, impl, namespace, a test
suite) is entered instead. An elided body is the lines strictly between the
line that opens it and the line that closes it, so braces stay balanced and
the marker is a line comment.
"""

from __future__ import annotations

import re

from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import Plan
from plane.economy.compress.salience import novel_error_lines

MIN_BODY = 3
MAX_NESTING = 60
COMMENT_MIN = 3
_WORDS = lazy(r"[A-Za-z]{3,}")
_COMMENT = lazy(r"^\s*(?://|/\*|\*|#(?!include|define|if|endif|else|pragma)|--)|^\s*$")
_CONTROL = lazy(
    r"^\s*(?:}\s*)?(?:if|else|for|while|switch|do|try|catch|finally|match|loop"
    r"|select|unsafe|return|case|default)\b"
)
_CONTAINER = lazy(
    r"\b(?:class|struct|impl|trait|interface|namespace|mod|enum|union|extern\s+\"C\"|object"
    r"|describe|suite|context)\b"
)
_FUNCTION = lazy(
    r"\)\s*(?:->\s*[^{]+|:\s*[\w<>\[\], .|?]+|const|noexcept|override|throws"
    r"[\w., ]+|where[^{]*)?\s*\{\s*$|=>\s*\{\s*$|\bfunc\b.*\{\s*$"
)
_NOISE = lazy(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|`[^`]*`|//.*$')


class Block:
    __slots__ = ("children", "close_line", "open_line")

    def __init__(self, open_line: int, close_line: int = -1) -> None:
        self.open_line = open_line
        self.close_line = close_line
        self.children: list[Block] = []


def compress(lines: list[str]) -> Plan:
    plan = Plan(lines, comment="// ")
    depths = _depths(lines)
    flagged = novel_error_lines(lines)
    for block in _blocks(lines):
        _visit(plan, lines, block, depths, flagged)
    fold_comment_blocks(plan, _COMMENT)
    return plan


def fold_comment_blocks(plan: Plan, comment: re.Pattern[str]) -> None:
    """Long comment blocks keep their first line of words (what the thing is); the rest folds.
    A line inside a `/* … */` block is comment whatever it starts with (zlib.h's prose)."""
    folded = plan.folded_mask()
    lines = plan.lines
    opened = _block_comment_open(lines)
    is_comment = [
        (opened[k] and not _code_part(line, True)[0].strip()) or comment.match(line) is not None
        for k, line in enumerate(lines)
    ]
    i = 0
    while i < len(lines):
        if folded[i] or not is_comment[i]:
            i += 1
            continue
        j = i
        while j < len(lines) and not folded[j] and is_comment[j]:
            j += 1
        first = next((k for k in range(i, j) if _WORDS.search(lines[k])), i)
        end = j
        while end > first + 1 and opened[end] != opened[first + 1]:
            end -= 1  # the line closing a `/* … */` stays, or what follows would be comment
        if end - first > COMMENT_MIN:
            plan.fold(first + 1, end, "comments")
        i = j


def _block_comment_open(lines: list[str]) -> list[bool]:
    """Whether a block comment is open at the start of each line (and after the last)."""
    opened = [False]
    for line in lines:
        opened.append(_code_part(line, opened[-1])[1])
    return opened


def _visit(
    plan: Plan, lines: list[str], block: Block, depths: list[int], flagged: list[bool]
) -> None:
    if depths[block.open_line] > MAX_NESTING:
        return  # generated or pathological nesting: leave it whole
    header = _header(lines, block.open_line)
    if block.close_line < 0 or _CONTAINER.search(header) or not _FUNCTION.search(header):
        _visit_children(plan, lines, block, depths, flagged)
        return
    body = block.close_line - block.open_line - 1
    if _CONTROL.match(header) or body < MIN_BODY:
        return
    nested = sum(c.close_line - c.open_line for c in block.children if c.close_line > 0)
    if nested > body * 2 // 3 and any(_is_function(lines, c) for c in block.children):
        _visit_children(plan, lines, block, depths, flagged)
        return
    _fold_statements(plan, block, depths, flagged)


def _is_function(lines: list[str], block: Block) -> bool:
    """A nested function (a closure, a method of an IIFE module), not `if (…) {` or `for … {`:
    only nested functions make a body a container worth entering rather than eliding."""
    header = _header(lines, block.open_line)
    return _FUNCTION.search(header) is not None and _CONTROL.match(header) is None


def _fold_statements(plan: Plan, block: Block, depths: list[int], flagged: list[bool]) -> None:
    _fold_range(plan, block.open_line + 1, block.close_line, depths, flagged)


def _fold_range(plan: Plan, a: int, b: int, depths: list[int], flagged: list[bool]) -> None:
    """Fold [a, b) one balanced statement at a time; a statement holding an error
    keeps its own lines and has its inner block folded the same way.

    A statement ends where braces are back at the body's level and no bracket or
    parenthesis is open: `return Promise.race([` … `]);` is one statement, so a kept
    line inside it keeps all of it and the code around the marker still parses."""
    if a >= b:
        return
    level = depths[a]
    start = a
    open_brackets = 0
    in_comment = False
    for i in range(a, b):
        code, in_comment = _code_part(plan.lines[i], in_comment)
        open_brackets += code.count("(") + code.count("[") - code.count(")") - code.count("]")
        ends = depths[i + 1] <= level and open_brackets <= 0 and not _continues(plan.lines, i)
        if ends or i == b - 1:
            _fold_unit(plan, start, i + 1, depths, flagged)
            start = i + 1
            open_brackets = 0


_GOES_ON = (".", "?", ":", "&&", "||", "+", "=>")
_GOES_ON_BLOCK = lazy(r"(?:else|catch|finally)\b")  # `}` then `else {` on its own line
_LEFT_OPEN = (",", "&&", "||", "+", "=", "?", ":", "=>", "(", "[")


def _continues(lines: list[str], i: int) -> bool:
    """Whether the statement on line i goes on below (`.then(…)` chains, `a &&` / `|| b`,
    `}` with its `else {` on the next line)."""
    here = lines[i].rstrip()
    after = lines[i + 1].lstrip() if i + 1 < len(lines) else ""
    return (
        here.endswith(_LEFT_OPEN) or after.startswith(_GOES_ON) or bool(_GOES_ON_BLOCK.match(after))
    )


def _fold_unit(plan: Plan, a: int, b: int, depths: list[int], flagged: list[bool]) -> None:
    if not any(flagged[a:b]):
        plan.fold(a, b, "body", atomic=True)
    elif b - a > 2 and depths[a] < MAX_NESTING and _one_block(plan.lines, a, b, depths):
        _fold_range(plan, a + 1, b - 1, depths, flagged)


def _one_block(lines: list[str], a: int, b: int, depths: list[int]) -> bool:
    """Whether lines [a, b) are `head {` … `}`: one block whose inside can fold on its own
    (not `f({` … `}).then(…)`, where folding the inside would cut the chain, nor
    `try {` … `} catch {` … `}`, whose inside holds the closing of the first block)."""
    inner = depths[a] + 1
    if min(depths[a + 1 : b]) < inner or not lines[b - 1].lstrip().startswith("}"):
        return False
    return not any(
        depths[k] == inner and lines[k].lstrip().startswith("}") for k in range(a + 1, b - 1)
    )


def _depths(lines: list[str]) -> list[int]:
    """Brace depth before each line (and after the last)."""
    depths = [0]
    depth = 0
    in_comment = False
    for raw in lines:
        line, in_comment = _code_part(raw, in_comment)
        depth = max(0, depth + line.count("{") - line.count("}"))
        depths.append(depth)
    return depths


def _visit_children(
    plan: Plan, lines: list[str], block: Block, depths: list[int], flagged: list[bool]
) -> None:
    for child in block.children:
        _visit(plan, lines, child, depths, flagged)


def _header(lines: list[str], i: int) -> str:
    """The line that opens a block, with the previous line when the brace stands alone."""
    line = lines[i]
    if line.strip() == "{" and i > 0:
        return lines[i - 1] + " {"
    return line


def _blocks(lines: list[str]) -> list[Block]:
    """Top-level blocks, each with its nested blocks; braces in strings and comments ignored."""
    roots: list[Block] = []
    stack: list[Block] = []
    in_comment = False
    for i, raw in enumerate(lines):
        line, in_comment = _code_part(raw, in_comment)
        for ch in line:
            if ch == "{":
                block = Block(i)
                (stack[-1].children if stack else roots).append(block)
                stack.append(block)
            elif ch == "}" and stack:
                block = stack.pop()
                block.close_line = i
                if block.open_line == i:
                    block.close_line = -1
    return roots


def _code_part(line: str, in_comment: bool) -> tuple[str, bool]:
    """The braces-relevant part of a line: strings, chars and comments removed."""
    out: list[str] = []
    rest = line
    while rest:
        if in_comment:
            end = rest.find("*/")
            if end < 0:
                return "".join(out), True
            rest = rest[end + 2 :]
            in_comment = False
            continue
        start = rest.find("/*")
        chunk = rest if start < 0 else rest[:start]
        out.append(_NOISE.sub("", chunk))
        if start < 0:
            break
        rest = rest[start + 2 :]
        in_comment = True
    return "".join(out), in_comment
