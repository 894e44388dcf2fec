"""What must stay visible, and the guard that enforces it for every compressor.

Folding removes redundancy, never the only copy of a detail an agent acts on:
a file location (`src/app.py`, `app.py:12`) or a name on a line that reports
an error or a warning. After a compressor has planned its folds, `guard`
reopens any folded line carrying such a detail that no kept line shows; the
fold around it splits in two. Compressors can therefore be bold about what
is redundant without each re-implementing "but keep the errors".

A detail counts as shown when it occurs anywhere in the kept text, inside a
longer word too (`Type` in `TypeError`): that is what a reader searching the
text finds. A path mentioned in a page-long line (a README in a JSON string)
does not reopen the page; a name on an error line always does.

Compressors whose lines *are* locations (search results, listings) switch off
the location half (`Plan.protect_paths = False`); errors are always guarded.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable
from itertools import compress as selected
from itertools import pairwise

from plane.economy.compress.levels import ERROR_LINE_RE, error_lines, reports_level
from plane.economy.compress.locations import PAGE_LINE, locations
from plane.economy.compress.patterns import lazy
from plane.economy.compress.plan import Fold, Inline, Plan, default_label, split_folds
from plane.economy.compress.visible import IDENT_RE, PATH_HINT, Visible, path_hint_lines

# What a warning or an error is about, quoted as a name (`'cgi' is deprecated`, gcc's
# `unused variable ‘n’`): one word between single quotes, not a quoted phrase, nor the
# double-quoted strings of JSON.
_QUOTED = lazy(r"'[\w.@/+:-]{1,80}'|‘[^’\s]{1,80}’|`[^`\s]{1,80}`")
_AT_LINE = lazy(r":\d+$")  # `warn.c:12` is about warn.c: the line is not a subject


def subjects(line: str) -> list[str]:
    """What a line reporting a warning or an error is about: the locations and quoted names
    in it. Two such lines alike but for their subjects are not repeats of each other."""
    if not reports_level(line):
        return []
    return [*(_AT_LINE.sub("", p) for p in locations(line)), *_QUOTED.findall(line)]


def novel_error_lines(lines: list[str]) -> list[bool]:
    """Error lines that name something no earlier error line named (the ones a fold must keep)."""
    flags = error_lines(lines)
    seen: set[str] = set()
    for i, flagged in enumerate(flags):
        if flagged:
            names = set(IDENT_RE.findall(lines[i])) | set(locations(lines[i]))
            flags[i] = not names <= seen
            seen |= names
    return flags


def details(line: str, paths: bool = True) -> set[str]:
    """The details of a line an agent may need: locations, and names on error lines."""
    found: set[str] = set(locations(line)) if paths else set()
    if ERROR_LINE_RE.search(line):
        found.update(IDENT_RE.findall(line))
        if not paths:
            found.update(locations(line))
    return found


def guard(plan: Plan) -> Plan:
    """Reopen folded lines, and folded pieces of inline lines, that carry a detail no kept
    text shows. A line the plan can reshape is reopened in part: only its pieces that
    carry such a detail."""
    if not plan.folds and not plan.inlines:
        return plan
    lines = plan.lines
    folded = plan.folded_mask()
    kept = [line for i, line in enumerate(lines) if not folded[i] and i not in plan.inlines]
    for inline in plan.inlines.values():
        kept.extend(text for text, kind in inline.pieces if kind is None)
    visible = Visible("\n".join(kept))
    flagged = plan.flagged()
    for i in sorted(plan.inlines):
        plan.inlines[i] = _guard_pieces(plan, plan.inlines[i], flagged[i], visible)
    folds = plan.normalised()
    dropped: list[Fold] = []
    needs: dict[int, list[str]] = {}
    candidates = _Candidates(plan, flagged)
    for fold in folds:
        listed = fold.kind in LISTS_LOCATIONS
        for i in candidates.of(fold):
            wanted = _wanted(lines[i], flagged[i])
            if listed:
                wanted = _not_listed(lines[i], wanted, fold.kind)
            missing = [w for w in sorted(wanted) if not visible.shows({w})]
            if not missing:
                continue
            if fold.atomic:
                dropped.append(fold)
                visible.add("\n".join(lines[fold.start : fold.end]))
                break
            needs[i] = missing
    pinned = _cover(needs, lines, visible, lambda i: _reopen(plan, i, flagged[i], visible))
    folded = plan.folded_mask()
    for i in list(pinned):
        j = plan.companions.get(i)
        if j is not None and folded[j] and j not in pinned:
            pinned.append(j)
            _reopen(plan, j, flagged[j], visible)
    pinned.sort()
    if dropped:
        folds = [f for f in folds if f not in dropped]
    if pinned:
        folds = split_folds(folds, pinned)
    if dropped or pinned:
        plan.folds = folds
    return plan


def _wanted(line: str, flagged: bool) -> set[str]:
    wanted = set(locations(line)) if flagged or _worth_a_line(line) else set()
    if flagged:
        wanted.update(IDENT_RE.findall(line))
        wanted.update(subjects(line))
    return wanted


def _not_listed(line: str, wanted: set[str], kind: str) -> set[str]:
    """What a folded line wants shown beyond what its marker lists, in a fold whose marker
    lists locations (`… 9 more matches at app.py:12,40`): the line's own location, and the
    names inside it, are shown by the marker, so an error line of a search is reopened only
    for the names of its text (a file its text mentions is not listed: still wanted)."""
    head, _ = default_label(kind, [line])
    return {w for w in wanted if w not in head}


OWNERS_WEIGHED = 64  # lines compared when choosing which one shows a detail


def _cover(
    needs: dict[int, list[str]],
    lines: list[str],
    visible: Visible,
    reopen: Callable[[int], None],
) -> list[int]:
    """Folded lines to reopen so that every needed detail shows, cheaply.

    A detail only one folded line carries decides for itself. For the rest, the line
    reopened is the one showing the most still-hidden details per character: the
    first line naming a module in a thousand matches is rarely the shortest. Ties go
    to the earlier line, so the choice depends on the text alone.
    """
    owners: dict[str, list[int]] = {}
    for i in sorted(needs):
        for token in needs[i]:
            owners.setdefault(token, []).append(i)
    only: dict[int, list[str]] = {}
    for token, found in owners.items():
        if len(found) == 1:
            only.setdefault(found[0], []).append(token)
    pinned: list[int] = []
    shown: set[str] = set()

    def pin(i: int) -> None:
        pinned.append(i)
        shown.update(needs[i])
        reopen(i)

    for i in sorted(only):
        if not visible.shows(set(only[i])):
            pin(i)
    for token in sorted(owners, key=lambda t: (owners[t][0], t)):
        if token in shown or visible.shows({token}):
            continue
        pin(
            max(
                owners[token][:OWNERS_WEIGHED],
                key=lambda i: (sum(t not in shown for t in needs[i]) / (len(lines[i]) + 1), -i),
            )
        )
    return sorted(pinned)


def _reopen(plan: Plan, i: int, flagged: bool, visible: Visible) -> None:
    """Keep line i: whole, or as an inline of which only the pieces that matter show."""
    line = plan.lines[i]
    reshaped = plan.reshape(i, line) if plan.reshape is not None else None
    if reshaped is None:
        visible.add(line)
        return
    visible.add("\n".join(text for text, kind in reshaped.pieces if kind is None))
    plan.inlines[i] = _guard_pieces(plan, reshaped, flagged, visible)


def _guard_pieces(plan: Plan, inline: Inline, flagged: bool, visible: Visible) -> Inline:
    """The inline with every folded piece that carries an unshown detail kept."""
    pieces = list(inline.pieces)
    on_error_line = _held_flags(pieces) if flagged and inline.document else None
    for n, (text, kind) in enumerate(pieces):
        if kind is None:
            continue
        if on_error_line is not None:
            flagged = on_error_line[n]
        if flagged:
            # Read with the glue before it, as a reader of the whole line does: after
            # `\\n`, `Usage` reads as the name `nUsage`.
            glued = inline.glue + text if n and pieces[n - 1][0] == inline.glue else text
            wanted = set(locations(glued)) | set(IDENT_RE.findall(glued))
        elif plan.protect_paths and _worth_a_line(text) and PATH_HINT.search(text):
            wanted = set(locations(text))
        else:
            continue
        if wanted and not visible.shows(wanted):
            pieces[n] = (text, None)
            visible.add(text)
    return inline._replace(pieces=tuple(pieces))


_NEWLINE_ESCAPE = lazy(r"\\.")  # `\\n` ends a held line; `\\\\n` is a backslash and an n


def _held_flags(pieces: list[tuple[str, str | None]]) -> list[bool]:
    """For each piece of a JSON document's line, whether a line its strings hold that the
    piece is part of (between `\\n` escapes, the escape starting the next) has an error
    word: names count as on an error line only on such a held line."""
    line = "".join(text for text, _ in pieces)
    cuts = [m.start() for m in _NEWLINE_ESCAPE.finditer(line) if m.group() == "\\n"]
    bounds = [0, *cuts, len(line)]
    erring = [ERROR_LINE_RE.search(line, a, b) is not None for a, b in pairwise(bounds)]
    flags: list[bool] = []
    at = 0
    for text, _ in pieces:
        first = bisect_right(bounds, at) - 1
        last = bisect_right(bounds, at + max(len(text) - 1, 0)) - 1
        flags.append(any(erring[first : min(last, len(erring) - 1) + 1]))
        at += len(text)
    return flags


def _worth_a_line(line: str) -> bool:
    """Whether a location is worth reopening this line for: a path reported on a line of
    output is; a path mentioned in a page-long line (a README held in a JSON string) is not,
    since reopening the page to show one file name would undo the fold it sits in."""
    return len(line) <= PAGE_LINE


# Folds whose markers list the locations of what they hold (`… 9 more matches at
# app.py:12,40`, `… 40 paths: src/{a.py,b.py}`): a location in one is shown by its marker.
LISTS_LOCATIONS = frozenset(
    {"matches", "rules", "diagnostics", "paths", "rows with paths", "items with paths"}
)


class _Candidates:
    """Folded lines that may carry a detail: error lines, and lines showing a location,
    each kind found once over the whole output (the hints only when a fold asks)."""

    def __init__(self, plan: Plan, flagged: list[bool]) -> None:
        self.plan = plan
        self.flagged = list(selected(range(len(flagged)), flagged))
        self.hinted: list[int] | None = None

    def of(self, fold: Fold) -> list[int]:
        found = _within(self.flagged, fold)
        if self.plan.protect_paths and fold.kind not in LISTS_LOCATIONS:
            if self.hinted is None:
                self.hinted = path_hint_lines(self.plan.lines, 0, len(self.plan.lines))
            hinted = _within(self.hinted, fold)
            if hinted:
                found = sorted({*found, *hinted})
        return found


def _within(lines: list[int], fold: Fold) -> list[int]:
    """The line numbers (sorted) inside the fold."""
    return lines[bisect_left(lines, fold.start) : bisect_left(lines, fold.end)]
