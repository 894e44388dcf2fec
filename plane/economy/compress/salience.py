"""What must stay visible, and the guard that enforces it for every compressor.

Folding removes redundancy, never the only copy of a detail an agent acts on:
a file location (`src/app.py`, `app.py:12`) or a name on a line that reports
an error or a warning. After a compressor has planned its folds, `guard`
reopens any folded line carrying such a detail that no kept line shows; the
fold around it splits in two. Compressors can therefore be bold about what
is redundant without each re-implementing "but keep the errors".

Compressors whose lines *are* locations (search results, listings) switch off
the location half (`Plan.protect_paths = False`); errors are always guarded.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from plane.economy.compress.plan import Fold, Plan

_EXT = (
    "py|pyi|pyx|js|mjs|cjs|ts|tsx|jsx|go|rs|c|h|cc|cpp|cxx|hpp|hh|java|kt|cs|rb|php|sh|bash"
    "|pl|lua|swift|scala|m|json|yaml|yml|toml|ini|cfg|conf|xml|lock|env|txt|md|rst|html|css"
    "|mk|cmake|gradle|tar|gz|tgz|zip|whl|deb|rpm|jar|bz2|xz|7z|so|a|dll|dylib|o|lib"
)
PATH_RE = re.compile(
    r"(?<![\w./-])((?:[\w.@+-]+/)*[\w@+-][\w.@+-]*\.(?:%s)(?:\.\d+)*(?::\d+)?)(?![\w/])" % _EXT
)
ERROR_LINE_RE = re.compile(
    r"error|fail|warning|exception|traceback|fatal|denied|not found|undefined", re.I
)
IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
_ERROR_LEVEL_RE = re.compile(
    r"\b(?:error|errors|failed|failure|fatal|exception|traceback|denied)\b|Error\b", re.I
)
_WARNING_LEVEL_RE = re.compile(r"\bwarn(?:ing)?s?\b", re.I)


def is_error_line(line: str) -> bool:
    return ERROR_LINE_RE.search(line) is not None


def details(line: str, paths: bool = True) -> set[str]:
    """The details of a line an agent may need: locations, and names on error lines."""
    found: set[str] = set(PATH_RE.findall(line)) if paths else set()
    if ERROR_LINE_RE.search(line):
        found.update(IDENT_RE.findall(line))
        if not paths:
            found.update(PATH_RE.findall(line))
    return found


def count_levels(lines: list[str]) -> tuple[int, int]:
    """How many of these lines report an error, and how many a warning."""
    errors = warnings = 0
    for line in lines:
        if _ERROR_LEVEL_RE.search(line):
            errors += 1
        elif _WARNING_LEVEL_RE.search(line):
            warnings += 1
    return errors, warnings


def guard(plan: Plan) -> Plan:
    """Reopen folded lines that carry a detail no kept line shows."""
    if not plan.folds:
        return plan
    folded = plan.folded_mask()
    visible: set[str] = set()
    for i, line in enumerate(plan.lines):
        if not folded[i] and i not in plan.inlines:
            visible |= _words(line)
    for inline in plan.inlines.values():
        for text, kind in inline.pieces:
            if kind is None:
                visible |= _words(text)
    pinned: list[int] = []
    for fold in plan.normalised():
        for i in range(fold.start, fold.end):
            wanted = details(plan.lines[i], plan.protect_paths)
            if wanted and not wanted <= visible:
                pinned.append(i)
                visible |= _words(plan.lines[i])
    if pinned:
        plan.folds = _split(plan.normalised(), pinned)
    return plan


def _words(text: str) -> set[str]:
    found = set(IDENT_RE.findall(text))
    found.update(PATH_RE.findall(text))
    return found


def _split(folds: list[Fold], pinned: list[int]) -> list[Fold]:
    out: list[Fold] = []
    pins = sorted(pinned)
    k = 0
    for fold in folds:
        start = fold.start
        while k < len(pins) and pins[k] < fold.end:
            if pins[k] >= fold.start:
                if pins[k] > start:
                    out.append(type(fold)(start, pins[k], fold.kind))
                start = pins[k] + 1
            k += 1
        if fold.end > start:
            out.append(type(fold)(start, fold.end, fold.kind))
    return out
