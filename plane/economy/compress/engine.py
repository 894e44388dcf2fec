"""compress(): classify a tool output, run its compressor, check, fail open.

The engine owns everything compressors must not get wrong on their own:
the size threshold, the agent harness's frame and line-number margins
(stripped before, put back after), the guard that keeps every detail visible,
rendering, and the final check that the result is smaller and expands back to
the input byte for byte. Anything else — an exception, a result that is not
smaller, a failed round trip — returns the input unchanged, so compression
can only ever save tokens, never lose a byte.

Deterministic by construction: nothing here reads a clock, draws a random
number, uses `hash()` or iterates a set into the output.
"""

from __future__ import annotations

from plane.economy.compress import frame, margins
from plane.economy.compress.classify import classify
from plane.economy.compress.context import Context, keep_all
from plane.economy.compress.formats import compressor
from plane.economy.compress.markers import LOOKS_LIKE_MARKER_RE, expand
from plane.economy.compress.plan import Plan, render
from plane.economy.compress.salience import guard

TYPE_CHECKING = False  # typing's guard, without importing typing: see plane.tuples
if TYPE_CHECKING:
    import logging


def _log() -> logging.Logger:
    """The engine's logger, loaded only when something goes wrong: `logging` costs a
    `plane compress` call a tenth of its budget."""
    import logging

    return logging.getLogger(__name__)


MIN_CHARS = 512
_FIELDS = ("text", "refs", "compressor", "chars_in", "chars_out", "note")


class Compressed:
    """A compressed tool output: the text to send and what it left out. Immutable.

    A plain class, not a dataclass: importing dataclasses cost a `plane compress`
    call more than compressing a small output does.
    """

    __slots__ = ("chars_in", "chars_out", "compressor", "note", "refs", "text")
    text: str
    refs: dict[str, str]
    compressor: str
    chars_in: int
    chars_out: int
    note: str  # why nothing was done, when nothing was

    def __init__(
        self,
        text: str,
        refs: dict[str, str] | None = None,
        compressor: str = "none",
        chars_in: int = 0,
        chars_out: int = 0,
        note: str = "",
    ) -> None:
        values = (text, {} if refs is None else refs, compressor, chars_in, chars_out, note)
        for name, value in zip(_FIELDS, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Compressed is immutable: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Compressed):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in _FIELDS)

    def __hash__(self) -> int:
        return hash((self.text, self.compressor, self.chars_in, self.chars_out, self.note))

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in _FIELDS)
        return f"Compressed({fields})"

    @property
    def saved(self) -> int:
        return self.chars_in - self.chars_out


def compress(text: str, *, command: str | None = None) -> Compressed:
    """Compress one tool output; on any doubt, return it unchanged."""
    if len(text) < MIN_CHARS:
        return _unchanged(text, "short")
    marked = "ref:k_" in text and LOOKS_LIKE_MARKER_RE.search(text) is not None
    try:
        result = _compress(text, command, marked)
    except Exception as err:  # fail-open is the contract: log it, send the original
        _log().exception("compression failed; sending the output unchanged")
        return _unchanged(text, f"error: {type(err).__name__}")
    if len(result.text) >= len(text):
        return _unchanged(text, "not smaller", result.compressor)
    try:
        restored = expand(result.text, result.refs.__getitem__)
    except KeyError:
        restored = None
    if restored != text:
        _log().error("compressor %s failed its round trip; sending unchanged", result.compressor)
        return _unchanged(text, "round trip failed", result.compressor)
    return result


def _compress(text: str, command: str | None, marked: bool = False) -> Compressed:
    head, body, tail = frame.split(text, command)
    command = command or frame.command(head)
    lines = body.split("\n")
    numbered = margins.strip(lines)
    bare = numbered.bodies if numbered else lines
    name = classify("\n".join(bare) if numbered else body, command)
    plan = guard(_Nesting(command).compress(bare, name))
    if numbered and plan.view_of is not None:
        # A page shown as text (HTML) is a view of its whole source: the numbers
        # could not be put back on it, so the numbered lines are compressed as they are.
        plan = guard(_Nesting(command).compress(lines, classify(body, command)))
    elif numbered:
        plan = guard(numbered.restore(plan))
    if marked:
        plan = _hide_markers(plan)
    out, refs = render(plan)
    if marked and not _expands_to(out, refs, body):
        return _unchanged(text, "already has markers")  # one stayed in view: nothing done
    text_out = head + out + tail
    return Compressed(text_out, refs, name, len(text), len(text_out))


def _expands_to(out: str, refs: dict[str, str], body: str) -> bool:
    try:
        return expand(out, refs.__getitem__) == body
    except KeyError:  # marker-like text of the input's own, kept: not ours to expand
        return False


def _hide_markers(plan: Plan) -> Plan:
    """The plan with every line that holds marker-like text (`ref:k_…` in a README that
    shows a marker) folded, so that expanding the result puts back only what was removed:
    what a marker puts back is never read again for markers (see `markers.expand`)."""
    folded = plan.folded_mask()
    for i, line in enumerate(plan.lines):
        if LOOKS_LIKE_MARKER_RE.search(line):
            plan.inlines.pop(i, None)
            if not folded[i]:
                plan.fold(i, i + 1, "lines")
    return plan


def _unchanged(text: str, note: str, name: str = "none") -> Compressed:
    return Compressed(text, {}, name, len(text), len(text), note)


def context(command: str | None = None) -> Context:
    """A context whose nesting runs the real compressors (for a format used on its own)."""
    return Context(command, _Nesting(command).compress)


MAX_NESTING = 8  # a JSON string holding a Markdown file holding a table is three


class _Nesting:
    """The nesting callback of one compression: runs a format's compressor on part of
    the output, and refuses (keeps every line) a text already in the hands of that
    compressor further up, and any nesting deeper than MAX_NESTING."""

    def __init__(self, command: str | None) -> None:
        self.command = command
        self.working: list[tuple[str, list[str]]] = []

    def compress(self, lines: list[str], kind: str | None) -> Plan:
        name = kind or classify("\n".join(lines))
        if len(self.working) >= MAX_NESTING or any(
            name == held and lines == text for held, text in self.working
        ):
            return keep_all(lines)
        context = Context(self.command if not self.working else None, self.compress)
        self.working.append((name, lines))
        try:
            return compressor(name)(lines, context)
        finally:
            self.working.pop()
