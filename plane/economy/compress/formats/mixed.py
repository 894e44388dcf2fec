"""Mixed documents (Markdown, reStructuredText, man pages): prose kept, blocks compressed.

Prose is what a person wrote for a person; it stays byte-identical (only
exact repeats of a line fold, as in plain text). Embedded blocks are machine
text inside the prose: fenced and indented code, literal blocks, tables,
JSON, command output. Each is compressed by its own compressor, its folds
shifted into place, with ordinary markers (no parser reads a document).
"""

from __future__ import annotations

from plane.economy.compress.context import NO_CONTEXT, Context
from plane.economy.compress.fold import dedup, exact
from plane.economy.compress.formats import documents
from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import Plan

MIN_BLOCK = 8
_FENCE = lazy(r"^\s*(```|~~~)")
_TABLE = lazy(r"^\s*\|.*\|\s*$|^\s*[+][-=+]+[+]\s*$")
_INDENTED = lazy(r"^(?: {4}|\t)\S")


def compress(lines: list[str], context: Context = NO_CONTEXT) -> Plan:
    plan = Plan(lines)
    for start, end, kind in _blocks(lines):
        if end - start >= MIN_BLOCK:
            _compress_block(plan, start, end, kind, context)
    dedup(plan, key=_prose_key)
    documents.skim(plan)
    return plan


def _prose_key(line: str) -> str:
    return "" if len(line.strip()) <= 3 else exact(line)


def _compress_block(plan: Plan, start: int, end: int, kind: str, context: Context) -> None:
    block = plan.lines[start:end]
    if kind == "table":
        inner = context.compress(block, "table")
    elif block[0].lstrip().startswith(("{", "[")):
        inner = context.compress(block, "json")
    elif kind == "code" and _looks_like_output(block):
        inner = context.compress(block, "logs")
    else:
        inner = context.compress(block, "source")
    for f in inner.folds:
        plan.fold(start + f.start, start + f.end, f.kind)


def _looks_like_output(block: list[str]) -> bool:
    return sum(1 for line in block if line.lstrip().startswith(("$ ", "> ", ">>> "))) > 0


def _blocks(lines: list[str]) -> list[tuple[int, int, str]]:
    """(start, end, kind) of fenced code, indented code and tables; the fences stay."""
    found: list[tuple[int, int, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith(fence.group(1)):
                j += 1
            found.append((i + 1, j, "code"))
            i = j + 1
            continue
        for pattern, kind in ((_TABLE, "table"), (_INDENTED, "code")):
            if pattern.match(line) and (i == 0 or not lines[i - 1].strip() or kind == "table"):
                j = i
                while j < len(lines) and (
                    pattern.match(lines[j]) or (kind == "code" and not lines[j].strip())
                ):
                    j += 1
                found.append((i, j, kind))
                i = j - 1
                break
        i += 1
    return found
