"""Terminal redraws: progress bars, download meters, training loops — last frame only.

A line rewritten in place with `\\r` a thousand times reached the model as a
thousand frames of which only the last is true now. Each such line keeps
its final frame (and any frame that reports an error); the earlier frames
fold inline. What remains is a log: single-template streams of lines (one
line per epoch, per file, per percent) fold by template like any log.
"""

from __future__ import annotations

from plane.economy.compress.context import NO_CONTEXT, Context
from plane.economy.compress.formats import build, logs
from plane.economy.compress.levels import is_error_line
from plane.economy.compress.plan import Inline, Plan


def compress(lines: list[str], context: Context = NO_CONTEXT) -> Plan:
    plan = logs.compress_with(lines, build.verb_key)
    folded = plan.folded_mask()
    for i, line in enumerate(lines):
        if "\r" in line.rstrip("\r") and not folded[i]:
            inline = _last_frame(i, line)
            if inline is not None:
                plan.inlines[i] = inline
    return plan


def _last_frame(index: int, line: str) -> Inline | None:
    """Fold every frame but the last non-empty one (frames reporting errors stay)."""
    body = line.rstrip("\r")
    ending = line[len(body) :]
    frames = body.split("\r")
    last = max((n for n, f in enumerate(frames) if f.strip()), default=len(frames) - 1)
    pieces: list[tuple[str, str | None]] = []
    pending: list[str] = []
    for n, frame in enumerate(frames):
        text = frame + ("\r" if n < len(frames) - 1 else "")
        if n == last or is_error_line(frame):
            if pending:
                pieces.append(("".join(pending), "redraws"))
                pending = []
            pieces.append((text, None))
        else:
            pending.append(text)
    if pending:
        pieces.append(("".join(pending), "redraws"))
    if ending:
        pieces.append((ending, None))
    if not any(kind for _, kind in pieces):
        return None
    return Inline(index, tuple(pieces))
