"""Line-number margins (`cat -n`, `nl`, `grep -n` on one file, Claude Code's `  12→`), stripped
and put back.

A numbered listing defeats every compressor: no two lines are alike and no
parser accepts them. So the numbers are taken off, the body is compressed as
what it is (source, config, a log), and the plan is applied to the numbered
lines: kept lines come back with their own numbers, verbatim.
"""

from __future__ import annotations

from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import Inline, Plan
from plane.tuples import NamedTuple

_MARGIN = lazy(r"^( *\d+(?:\t|  |:|-(?=\S)|→))")
_MIN_SHARE = 0.9
_MIN_LINES = 8


class Numbered(NamedTuple):
    """The original lines, their margins, and the bodies with margins removed."""

    lines: list[str]
    prefixes: list[str]
    bodies: list[str]

    def restore(self, plan: Plan) -> Plan:
        """The body's plan, applied to the numbered lines."""
        inlines = {}
        for i, inline in plan.inlines.items():
            pieces = ((self.prefixes[i], None), *inline.pieces)
            inlines[i] = Inline(i, pieces)
        return Plan(
            list(self.lines),
            folds=list(plan.folds),
            inlines=inlines,
            comment=plan.comment,
            protect_paths=plan.protect_paths,
        )


def few_open_with_a_number(lines: list[str], nonempty: int) -> bool:
    """Whether fewer than `_MIN_SHARE` of the non-empty lines open with a number (after
    spaces), read only until the lines without one settle it: a tenth of a source file's
    lines, where counting the numbers in the whole text searched every position of it."""
    without = 0
    for line in lines:
        if line and not line.lstrip(" ")[:1].isdecimal():
            without += 1
            if nonempty - without < _MIN_SHARE * nonempty:
                return True
    return False


def strip(lines: list[str]) -> Numbered | None:
    """The numbered form of these lines, or None when they carry no margin."""
    nonempty = len(lines) - lines.count("")
    if nonempty < _MIN_LINES or few_open_with_a_number(lines, nonempty):
        return None
    prefixes: list[str] = []
    numbered = nonempty = 0
    previous = -1
    rising = 0
    for line in lines:
        found = _MARGIN.match(line)
        prefix = found.group(1) if found else ""
        prefixes.append(prefix)
        if line:
            nonempty += 1
        if found:
            numbered += 1
            number = int(prefix.strip(" \t:-→"))
            rising += number > previous
            previous = number
    if nonempty < _MIN_LINES or numbered < _MIN_SHARE * nonempty:
        return None
    if rising < _MIN_SHARE * numbered:
        return None
    bodies = [line[len(p) :] for line, p in zip(lines, prefixes, strict=True)]
    return Numbered(list(lines), prefixes, bodies)
