"""Unified diffs, parsed and applied in memory. Pure: no disk, no clock.

Hunks must match the file exactly (context and removed lines); a hunk may sit
at another line than its header says, as after earlier edits, and is looked
for nearest the expected line first. There is no fuzz: a patch that does not
fit is refused rather than applied somewhere it was not meant for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
NO_NEWLINE = "\\ No newline at end of file"


class PatchError(ValueError):
    """The patch cannot be read or does not fit; the message says where."""


@dataclass
class Hunk:
    header: str
    old_start: int
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    old_eof_newline: bool = True
    new_eof_newline: bool = True
    added: int = 0
    removed: int = 0


@dataclass
class FilePatch:
    old_path: str | None
    """None for a file the patch creates."""
    new_path: str | None
    """None for a file the patch deletes."""
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""


def parse(text: str) -> list[FilePatch]:
    # Split on newlines only: str.splitlines would also split inside a line
    # at a form feed or a Unicode line separator.
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    patches: list[FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(("rename from ", "copy from ")):
            raise PatchError("renames and copies are not supported; write the new file instead")
        if line.startswith("GIT binary patch") or line.startswith("Binary files "):
            raise PatchError("binary patches are not supported")
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            patches.append(_file_header(line[4:], lines[i + 1][4:]))
            i += 2
            continue
        if line.startswith("@@"):
            if not patches:
                raise PatchError(f"the hunk {line!r} comes before any `--- ` / `+++ ` header")
            hunk, i = _hunk(lines, i)
            patches[-1].hunks.append(hunk)
            continue
        i += 1  # `diff --git`, `index …`, mode lines and prose between files
    if not patches:
        raise PatchError("no `--- ` / `+++ ` file header found; send a unified diff")
    for patch in patches:
        if not patch.hunks:
            raise PatchError(f"`{patch.path}` has a header but no hunks")
    return patches


def _file_header(old: str, new: str) -> FilePatch:
    old_path, new_path = _header_path(old), _header_path(new)
    if old_path is None and new_path is None:
        raise PatchError("a file header names /dev/null on both sides")
    # git's a/ and b/ prefixes, removed only when the diff uses both.
    if (old_path is None or old_path.startswith("a/")) and (
        new_path is None or new_path.startswith("b/")
    ):
        old_path = old_path[2:] if old_path else None
        new_path = new_path[2:] if new_path else None
    return FilePatch(old_path, new_path)


def _header_path(raw: str) -> str | None:
    path = raw.split("\t", 1)[0].strip()
    if len(path) > 1 and path[0] == path[-1] == '"':
        path = path[1:-1]
    return None if path == "/dev/null" else path


def _hunk(lines: list[str], i: int) -> tuple[Hunk, int]:
    header = lines[i]
    found = _HUNK.match(header)
    if not found:
        raise PatchError(f"{header!r} is not a hunk header like `@@ -12,7 +12,8 @@`")
    old_len = int(found[2]) if found[2] is not None else 1
    new_len = int(found[4]) if found[4] is not None else 1
    hunk = Hunk(header=header, old_start=int(found[1]))
    i += 1
    while len(hunk.old) < old_len or len(hunk.new) < new_len:
        if i >= len(lines):
            raise PatchError(f"the hunk {header!r} ends before its line counts are reached")
        line = lines[i]
        kind, body = (line[:1], line[1:]) if line else (" ", "")
        if kind == " ":
            hunk.old.append(body)
            hunk.new.append(body)
        elif kind == "-":
            hunk.old.append(body)
            hunk.removed += 1
        elif kind == "+":
            hunk.new.append(body)
            hunk.added += 1
        elif kind != "\\":
            raise PatchError(
                f"in the hunk {header!r}, line {line[:60]!r} starts with no ` `, - or +"
            )
        i += 1
        if i < len(lines) and lines[i].startswith("\\"):
            if kind in (" ", "-"):
                hunk.old_eof_newline = False
            if kind in (" ", "+"):
                hunk.new_eof_newline = False
            i += 1
    if len(hunk.old) != old_len or len(hunk.new) != new_len:
        raise PatchError(f"the hunk {header!r} has line counts that do not match its lines")
    return hunk, i


def apply(content: str | None, patch: FilePatch) -> str | None:
    """The file's content after `patch` (None when it deletes the file)."""
    if patch.old_path is None:
        if content is not None:
            raise PatchError(f"`{patch.path}` already exists; the patch creates it")
        created = [line for hunk in patch.hunks for line in hunk.new]
        return _join(created, patch.hunks[-1].new_eof_newline, "\n")
    if content is None:
        raise PatchError(f"`{patch.path}` does not exist")
    lines, newline_at_end, eol = _split(content)
    offset = 0
    floor = 0
    for number, hunk in enumerate(patch.hunks, start=1):
        # A hunk that only adds lines names the line they follow, not the first it changes.
        expected = hunk.old_start + offset - (1 if hunk.old else 0)
        at = _locate(lines, hunk.old, expected, floor)
        if at is None:
            raise PatchError(
                f"hunk {number} of `{patch.path}` ({hunk.header}) does not match the file; "
                "read it again and make the diff from what is there"
            )
        if at + len(hunk.old) == len(lines):
            newline_at_end = hunk.new_eof_newline
        lines[at : at + len(hunk.old)] = hunk.new
        offset += len(hunk.new) - len(hunk.old)
        floor = at + len(hunk.new)
    if patch.new_path is None:
        if lines:
            raise PatchError(f"`{patch.path}` is not empty after the patch that deletes it")
        return None
    return _join(lines, newline_at_end, eol)


def _split(content: str) -> tuple[list[str], bool, str]:
    """Lines without their endings, whether the last one had one, and the
    ending used: a CRLF file is matched without its `\\r`s and keeps them."""
    if not content:
        return [], True, "\n"
    lines = content.split("\n")
    newline_at_end = lines[-1] == ""
    if newline_at_end:
        lines.pop()
    body = lines if newline_at_end else lines[:-1]
    if body and all(line.endswith("\r") for line in body):
        return [line.removesuffix("\r") for line in lines], newline_at_end, "\r\n"
    return lines, newline_at_end, "\n"


def _join(lines: list[str], newline_at_end: bool, eol: str) -> str:
    if not lines:
        return ""
    return eol.join(lines) + (eol if newline_at_end else "")


def _locate(lines: list[str], old: list[str], expected: int, floor: int) -> int | None:
    """Where `old` sits in `lines` at or after `floor`, nearest `expected`."""
    last = len(lines) - len(old)
    expected = min(max(expected, floor), max(last, floor))
    for distance in range(max(last - floor, 0) + 1):
        for at in (expected - distance, expected + distance):
            if floor <= at <= last and lines[at : at + len(old)] == old:
                return at
    return None
