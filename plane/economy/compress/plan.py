"""A plan: which lines of an output are kept verbatim and which become markers.

Compressors never write text. They look at the lines and say, for each
contiguous span, "keep" or "fold, with this kind of label"; one renderer
turns that into text and refs. That is what makes "kept lines are never
rewritten" and the byte-for-byte round trip hold by construction, and lets the
engine's guard (see `salience`) reopen any fold that would hide a detail.

Lines are `text.split("\\n")`: a marker takes the place of whole lines and the
newlines between them, so joining the rendered pieces with "\\n" and expanding
gives the input back.
"""

from __future__ import annotations

from collections.abc import Callable

from plane.economy.compress.levels import count_levels, error_lines
from plane.economy.compress.locations import PAGE_LINE, locations
from plane.economy.compress.markers import marker, ref_for
from plane.economy.compress.patterns import lazy
from plane.tuples import NamedTuple

_TRUE = [True]
# A labeller turns (kind, removed lines) into the marker's label and tail.
Labeller = Callable[[str, list[str]], tuple[str, str]]


class Fold(NamedTuple):
    """Lines [start, end) replaced by one marker of the given kind."""

    start: int
    end: int
    kind: str = "lines"
    atomic: bool = False  # the guard may drop this fold, never split it (code must still parse)
    parts: tuple[tuple[str, int], ...] = ()  # (kind, lines) of touching folds made one marker


class Inline(NamedTuple):
    """One line rendered from pieces: (text, None) kept, (text, kind) folded.

    `glue` is the separator between the lines a long line holds (`\\n` in a JSON
    string): folded pieces of one kind with only glue between them become one
    marker, so the guard can reopen one held line without splitting a marker by hand.
    """

    index: int  # type: ignore[assignment]  # the line it renders, not tuple.index
    pieces: tuple[tuple[str, str | None], ...]
    glue: str = ""
    # The line is a JSON document of its own (`json.dumps` of a whole list): the guard
    # reads each line its strings hold (between `\\n` escapes) as a line of its own, so an
    # error word flags the names of its own held line, not of the whole document.
    document: bool = False


class Plan:
    """Folds and inline edits over `lines`; every line not folded is kept.

    A plain class, not a dataclass: `plane compress` runs once per shell call,
    and importing dataclasses cost more than compressing a small output.
    """

    _FIELDS = (
        "comment",
        "companions",
        "folds",
        "inlines",
        "lines",
        "protect_paths",
        "reshape",
        "view_label",
        "view_of",
    )
    __slots__ = (*_FIELDS, "_flagged")

    def __init__(
        self,
        lines: list[str],
        folds: list[Fold] | None = None,
        inlines: dict[int, Inline] | None = None,
        comment: str | None = None,
        view_of: str | None = None,
        view_label: str = "HTML shown as text",
        protect_paths: bool = True,
        reshape: Callable[[int, str], Inline | None] | None = None,
        companions: dict[int, int] | None = None,
    ) -> None:
        self.lines = lines
        self.folds: list[Fold] = [] if folds is None else folds
        self.inlines: dict[int, Inline] = {} if inlines is None else inlines
        self.comment = comment  # "# " / "// " / "...  # ": code markers keep the indent
        self.view_of = view_of  # the lines are a rendering of this text (HTML as text)
        self.view_label = view_label
        self.protect_paths = protect_paths  # the guard keeps lines showing a location
        # A line the guard must reopen may be reopened in part instead: a page-long line
        # holding many lines (a README in a JSON string) becomes an Inline of its own.
        self.reshape = reshape
        # A line that means nothing without another: a compiler's `note:` without its
        # error. When the guard reopens the key, it reopens the value too.
        self.companions: dict[int, int] = {} if companions is None else companions
        self._flagged: list[bool] = []

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Plan):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._FIELDS)
        return f"Plan({fields})"

    def flagged(self) -> list[bool]:
        """Which lines report an error or a warning (`levels.error_lines`), worked out once
        for these lines (again if lines were added: a page's names after its view). Read
        only: the compressors, the guard and the labels all ask."""
        if len(self._flagged) != len(self.lines):
            self._flagged = error_lines(self.lines)
        return self._flagged

    def fold(self, start: int, end: int, kind: str = "lines", atomic: bool = False) -> None:
        if end > start:
            self.folds.append(Fold(start, end, kind, atomic))

    def folded_mask(self) -> list[bool]:
        mask = [False] * len(self.lines)
        for f in self.folds:
            if 0 <= f.start and f.end <= len(mask):
                mask[f.start : f.end] = _TRUE * (f.end - f.start)
                continue
            for i in range(f.start, f.end):  # a fold past the lines fails as it always did
                mask[i] = True
        return mask

    def normalised(self) -> list[Fold]:
        """Folds sorted, overlaps dropped (first one wins), inline lines excluded."""
        out: list[Fold] = []
        last = 0
        for f in sorted(self.folds, key=lambda f: (f.start, f.end)):
            if f.start < last or (
                self.inlines and any(i in self.inlines for i in range(f.start, f.end))
            ):
                continue
            out.append(f)
            last = f.end
        return out

    def merged(self) -> list[Fold]:
        """Normalised folds with touching folds made one marker.

        Folds of one kind simply grow. Touching folds of different kinds (three
        unchanged lines, then two removed ones) become one marker whose label
        names each part: two markers in a row cost a second ref and tell the
        reader nothing the parts of one label do not. Code folds stay apart,
        since each is a comment line the language must still parse around.
        """
        out: list[Fold] = []
        for f in self.normalised():
            last = out[-1] if out else None
            if last is None or last.end != f.start:
                out.append(f)
            elif last.kind == f.kind and not last.parts:
                out[-1] = Fold(last.start, f.end, f.kind, f.atomic)
            elif self.comment is None and not (last.atomic or f.atomic):
                parts = last.parts or ((last.kind, last.end - last.start),)
                out[-1] = Fold(last.start, f.end, "parts", False, _add(parts, f))
            else:
                out.append(f)
        return out


def split_folds(folds: list[Fold], pinned: list[int]) -> list[Fold]:
    """The folds with the pinned lines taken out of them: each fold around one splits in two."""
    out: list[Fold] = []
    pins = sorted(pinned)
    k = 0
    for fold in folds:
        start = fold.start
        while k < len(pins) and pins[k] < fold.end:
            if pins[k] >= fold.start:
                if pins[k] > start:
                    out.append(Fold(start, pins[k], fold.kind, fold.atomic))
                start = pins[k] + 1
            k += 1
        if fold.end > start:
            out.append(Fold(start, fold.end, fold.kind, fold.atomic))
    return out


def _add(parts: tuple[tuple[str, int], ...], fold: Fold) -> tuple[tuple[str, int], ...]:
    kind, n = parts[-1]
    if kind == fold.kind:
        return (*parts[:-1], (kind, n + fold.end - fold.start))
    return (*parts, (fold.kind, fold.end - fold.start))


_HEADS = {
    "similar": "… {n} similar",
    "lines": "… {n} {noun}",
    "log": "… {n} log {noun} omitted",
    "rows": "… {n} rows",
    "items": "… {n} {noun}",
    "body": "… body {n} {noun}",
    "context": "… {n} unchanged",
    "added": "… {n} more added",
    "removed": "… {n} more removed",
    "replaced": "… {n} removed {noun}",
    "nearby": "… {n} context {noun}",
    "entries": "… {n} entries",
    "frames": "… {n} stack {noun}",
    "comments": "… {n} comment {noun}",
    "echo": "… {n} echoed {noun}",
    "paragraph": "… {n} more {noun}",
    "docstring": "… {n} docstring {noun}",
    "header": "… index/---/+++",
}
_MATCH_AT = lazy(r"^(?P<path>(?=[^\s:]*?[A-Za-z_./])[^\s:][^:]*?):(?P<line>\d+):")


def _matches(removed: list[str]) -> str:
    """`… 5 more matches at a.py:12,40,88; b.py:7`: folded search matches keep their
    locations in the label, each file once with its line numbers."""
    at: dict[str, list[str]] = {}
    for line in removed:
        found = _MATCH_AT.match(line)
        if found:
            at.setdefault(found.group("path"), []).append(found.group("line"))
    n = len(removed)
    head = f"… {n} more match{'' if n == 1 else 'es'}"
    if not at:
        return head
    return head + " at " + "; ".join(f"{path}:{','.join(lines)}" for path, lines in at.items())


# A line that is one path and nothing else (`find`, `git ls-files`, `rg --files`): no
# spaces, colons, commas, braces or brackets, so a list of them in braces reads back.
PATH_LINE = lazy(r"^(?:/|~/|\./|\.\./)?(?:[\w.@+-]+/)+[\w.@+-]+/?$")


def _paths(removed: list[str], rows: str = "entries", named: frozenset[str] = frozenset()) -> str:
    """`… 40 paths: src/db.py; {src/app/{a.py,b.py},docs/x.md}`: folded lines keep every
    location they show in the label (a path line itself, the file an `ls -l` row names).
    A path the output names where it matters (`named`: in an error, a diff header, a
    match) is written whole, so that a model looking for it finds it as it is; the others
    are written with each directory once, as a shell's brace expansion reads, in the order
    they first appear. The rest of a row (sizes, dates) is behind the ref."""
    found: dict[str, None] = {}
    bare = True
    for line in removed:
        if not line.strip() or len(line) > PAGE_LINE:  # a page is not a row (see salience)
            continue
        paths = [line] if PATH_LINE.match(line) else locations(line)
        bare = bare and paths == [line]
        found.update(dict.fromkeys(paths))
    n = sum(1 for line in removed if line.strip())
    noun = ("path" if n == 1 else "paths") if bare else rows
    literal = [path for path in found if path in named or _where(path) in named]
    rest = [path for path in found if path not in literal]
    listed = "; ".join(part for part in (", ".join(literal), rest and braced(rest)) if part)
    return f"… {n} {noun}" + (": " + listed if listed else "")


def _where(location: str) -> str:
    """A location without its `:line`."""
    head, colon, tail = location.rpartition(":")
    return head if colon and tail.isdigit() else location


_DIFF_HEADER = lazy(r"^(?:diff --git |--- |\+\+\+ |Index: |rename (?:from|to) )")


def named_paths(lines: list[str], flagged: list[bool] | None = None) -> frozenset[str]:
    """The paths an output names where they matter: on its error lines, its diff headers
    and its search matches (`path:12:`), each also without its `:line`."""
    flagged = error_lines(lines) if flagged is None else flagged
    found: set[str] = set()
    for line, flag in zip(lines, flagged, strict=True):
        if len(line) > PAGE_LINE:
            continue
        if flag or _DIFF_HEADER.match(line) or _MATCH_AT.match(line):
            for location in locations(line):
                found.update((location, _where(location)))
                if location.startswith(("a/", "b/")):
                    found.add(_where(location)[2:])
    return frozenset(found)


def braced(paths: list[str]) -> str:
    """Distinct paths as one shell brace expression, directories shared once, in the order
    they first appear: `a/{b/{x.py,y.py},c.py}` stands for a/b/x.py, a/b/y.py, a/c.py."""
    if len(paths) == 1:
        return paths[0]
    buckets: dict[str, list[str]] = {}
    for path in paths:
        slash = path.find("/")
        head, rest = (path, "") if slash < 0 else (path[: slash + 1], path[slash + 1 :])
        buckets.setdefault(head, []).append(rest)
    parts = [head + braced(rests) if rests != [""] else head for head, rests in buckets.items()]
    return parts[0] if len(parts) == 1 else "{" + ",".join(parts) + "}"


def lists_paths(plan: Plan, kinds: frozenset[str], into: str = "paths") -> None:
    """Folds of the given kinds whose lines show locations list them in their markers
    (kind `paths`): a listing's names stay in view, their shared prefixes and the rest of
    their rows do not."""
    lines = plan.lines
    plan.folds = [
        fold._replace(kind=into)
        if fold.kind in kinds
        and not fold.atomic
        and any(
            PATH_LINE.match(lines[i]) or locations(lines[i]) for i in range(fold.start, fold.end)
        )
        else fold
        for fold in plan.folds
    ]


_RULE_AT = lazy(r"^[^\s:][^:]*?:\d+:(?:\d+:)? (?P<code>[A-Z]+\d+)\b")


def _rules(removed: list[str]) -> str:
    """`… 12 more D102, ANN001 at a.py:12,40`: folded linter diagnostics keep their rule
    codes and locations in the label."""
    codes = dict.fromkeys(m.group("code") for m in map(_RULE_AT.match, removed) if m)
    located = _matches(removed).partition(" at ")[2]
    head = f"… {len(removed)} more {', '.join(codes) or 'diagnostics'}"
    return head + (" at " + located if located else "")


_CODE_HEADLINE = lazy(r"^(?P<code>[A-Z]+\d+) ")
_LOCATION_LINE = lazy(r"^\s*(?:-->|==>)\s*(?P<at>\S+?:\d+(?::\d+)?)")


def _located(removed: list[str]) -> str:
    """`… 40 more D102, ANN001 at app.py:14:9, app.py:30:5`: diagnostics folded whole keep
    their rule codes and their locations, each as printed, in the label."""
    codes = dict.fromkeys(m.group("code") for m in map(_CODE_HEADLINE.match, removed) if m)
    at = [m.group("at") for m in map(_LOCATION_LINE.match, removed) if m]
    head = f"… {len(at)} more {', '.join(codes) or 'diagnostics'}"
    return head + (" at " + ", ".join(at) if at else "")


def _values(removed: list[str]) -> int:
    """How many JSON values folded pieces of one line hold: their parts between commas
    outside strings and brackets (`1, {"a": [2, 3]}, "x,y"` is three)."""
    n = 0
    for text in removed:
        depth = 0
        part = quoted = escaped = False
        for ch in text:
            if quoted:
                quoted = escaped or ch != '"'
                escaped = not escaped and ch == "\\"
                continue
            if ch == "," and depth == 0:
                n += part
                part = False
                continue
            if ch == '"':
                quoted = True
            elif ch in "[{":
                depth += 1
            elif ch in "]}":
                depth -= 1
            part = part or not ch.isspace()
        n += part
    return n


_PATHS = {"paths": "entries", "rows with paths": "rows", "items with paths": "items"}
# Heads that count something other than lines, worked out only when asked for.
_COUNTED: dict[str, Callable[[list[str]], str]] = {
    "matches": _matches,
    "rules": _rules,
    "repeat": lambda removed: f"×{len(removed) + 1}",
    "paragraphs": lambda removed: (
        f"… {len(removed)} more paragraph{'' if len(removed) == 1 else 's'}"
    ),
    "words": lambda removed: f"… {sum(len(text.split()) for text in removed)} more words",
    "values": lambda removed: f"… {_values(removed)} more values",
    "diagnostics": lambda removed: _located(removed),
    "redraws": lambda removed: f"… {sum(line.count(chr(13)) for line in removed)} earlier frames",
}


def default_label(
    kind: str, removed: list[str], named: frozenset[str] = frozenset()
) -> tuple[str, str]:
    """Labels say what was removed and how much, and count errors and warnings in it."""
    n = len(removed)
    noun = "line" if n == 1 else "lines"
    special = _COUNTED.get(kind)
    if kind in _PATHS:
        head = _paths(removed, _PATHS[kind], named)
    elif special is not None:
        head = special(removed)
    else:
        head = _HEADS.get(kind, "… {n} {noun}").format(n=n, noun=noun, es="" if n == 1 else "es")
    errors, warnings = count_levels(removed)
    parts = []
    if errors:
        parts.append(f"{errors} ERROR")
    if warnings:
        parts.append(f"{warnings} WARNING")
    return head, ("; " + ", ".join(parts)) if parts else ""


MAX_MARKER = 2000
"""Characters a marker line may have: a fold whose label would make it longer (a list
of every path of a long listing) is folded as several markers, each under this."""


def render(plan: Plan, labeller: Labeller | None = None) -> tuple[str, dict[str, str]]:
    """The compressed text and the refs it uses (ref → exact removed text)."""
    lines = plan.lines
    labeller = labeller or _Labels(plan)
    labels: dict[Fold, tuple[str, str]] = {}

    def label(fold: Fold) -> tuple[str, str]:  # once a fold: splitting a long one asks first
        if fold not in labels:
            labels[fold] = _label(fold, lines[fold.start : fold.end], labeller)
        return labels[fold]

    out: list[str] = []
    refs: dict[str, str] = {}
    pos = 0
    for f in plan.merged():
        _keep(plan, pos, f.start, out, refs, labeller)
        for piece in _bounded(plan, f, label):
            removed = lines[piece.start : piece.end]
            content = "\n".join(removed)
            head, tail = label(piece)
            ref = ref_for(content)
            text = _marker_line(plan, removed, head, ref, tail)
            if len(text) >= len(content):
                _keep(plan, piece.start, piece.end, out, refs, labeller)
            else:
                refs[ref] = content
                out.append(text)
        pos = f.end
    _keep(plan, pos, len(lines), out, refs, labeller)
    text = "\n".join(out)
    if plan.view_of is not None:
        ref = ref_for(plan.view_of)
        refs[ref] = plan.view_of
        text = f"[… {plan.view_label} view ref:{ref}]\n{text}\n[end of view ref:{ref}]"
    return text, refs


class _Labels:
    """The default labels of one plan, with the paths its output names (worked out the
    first time a label lists paths)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.named: frozenset[str] | None = None

    def __call__(self, kind: str, removed: list[str]) -> tuple[str, str]:
        if kind not in _PATHS:
            return default_label(kind, removed)
        if self.named is None:
            self.named = named_paths(self.plan.lines, self.plan.flagged())
        return default_label(kind, removed, self.named)


def _bounded(plan: Plan, fold: Fold, label: Callable[[Fold], tuple[str, str]]) -> list[Fold]:
    """The fold, or halves of it (and halves of those) until each one's marker line is
    at most MAX_MARKER characters; a one-line fold, or code's, stays whole."""
    if fold.end - fold.start < 2 or fold.atomic or plan.comment is not None:
        return [fold]
    head, tail = label(fold)
    if len(head) + len(tail) + 24 <= MAX_MARKER:  # `[`, ` ref:k_…` and `]` are 18 more
        return [fold]
    mid = (fold.start + fold.end) // 2
    first, second = _halves(fold, mid)
    return _bounded(plan, first, label) + _bounded(plan, second, label)


def _halves(fold: Fold, mid: int) -> tuple[Fold, Fold]:
    if not fold.parts:
        return fold._replace(end=mid), fold._replace(start=mid)
    before: list[tuple[str, int]] = []
    after: list[tuple[str, int]] = []
    at = fold.start
    for kind, n in fold.parts:
        if at + n <= mid:
            before.append((kind, n))
        elif at >= mid:
            after.append((kind, n))
        else:
            before.append((kind, mid - at))
            after.append((kind, at + n - mid))
        at += n
    return _parted(fold.start, mid, before), _parted(mid, fold.end, after)


def _parted(start: int, end: int, parts: list[tuple[str, int]]) -> Fold:
    if len(parts) == 1:
        return Fold(start, end, parts[0][0])
    return Fold(start, end, "parts", False, tuple(parts))


def _label(fold: Fold, removed: list[str], labeller: Labeller) -> tuple[str, str]:
    """A fold's label; a merged fold's sums its parts by kind, counts errors once."""
    if not fold.parts:
        return labeller(fold.kind, removed)
    by_kind: dict[str, list[str]] = {}
    at = 0
    for kind, n in fold.parts:
        by_kind.setdefault(kind, []).extend(removed[at : at + n])
        at += n
    if any(any(line.strip() for line in lines) for lines in by_kind.values()):
        # Blank lines folded along with content are not worth naming: "1 similar" for
        # the empty line after an echo would read as one more diagnostic.
        by_kind = {k: lines for k, lines in by_kind.items() if any(x.strip() for x in lines)}
    heads: list[str] = []
    for kind, lines in by_kind.items():
        head, _ = labeller(kind, lines)
        heads.append(head.removeprefix("… ") if heads else head)
    _, tail = labeller("lines", removed)
    return ", ".join(heads), tail


def _marker_line(plan: Plan, removed: list[str], head: str, ref: str, tail: str) -> str:
    text = marker(head, ref, tail)
    if plan.comment is None:
        return text
    first = next((line for line in removed if line.strip()), "")
    indent = first[: len(first) - len(first.lstrip(" \t"))]
    closing = " */" if plan.comment.rstrip().endswith("/*") else ""
    return f"{indent}{plan.comment}{text}{closing}"


def _keep(
    plan: Plan, start: int, end: int, out: list[str], refs: dict[str, str], labeller: Labeller
) -> None:
    for i in range(start, end):
        inline = plan.inlines.get(i)
        if inline is None:
            out.append(plan.lines[i])
            continue
        out.append(_render_inline(inline, refs, labeller))


def _render_inline(inline: Inline, refs: dict[str, str], labeller: Labeller) -> str:
    parts: list[str] = []
    for texts, kind in _runs(inline):
        text = inline.glue.join(texts)
        if kind is None:
            parts.append(text)
            continue
        head, tail = labeller(kind, texts)
        ref = ref_for(text)
        mark = marker(head, ref, tail)
        if len(mark) >= len(text):
            parts.append(text)
        else:
            refs[ref] = text
            parts.append(mark)
    return "".join(parts)


def _runs(inline: Inline) -> list[tuple[list[str], str | None]]:
    """The pieces, with folded ones of one kind joined when they touch or have only the
    glue between them."""
    pieces = inline.pieces
    glue = (inline.glue, None)
    out: list[tuple[list[str], str | None]] = []
    i = 0
    while i < len(pieces):
        text, kind = pieces[i]
        texts = [text]
        i += 1
        while kind is not None and i < len(pieces):
            if pieces[i][1] == kind:
                texts[-1] += pieces[i][0]
                i += 1
            elif (
                inline.glue
                and pieces[i] == glue
                and i + 1 < len(pieces)
                and pieces[i + 1][1] == kind
            ):
                texts.append(pieces[i + 1][0])
                i += 2
            else:
                break
        out.append((texts, kind))
    return out
