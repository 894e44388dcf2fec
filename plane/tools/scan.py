"""Walking a workspace and searching it. Standard library only, on purpose.

`grep` runs this file as a child process (`python -I -c <this file> '<json>'`, under
the same launcher and sandbox as `run_command`) rather than in a thread: a
regular expression can backtrack for hours, a thread cannot be stopped, and a
process can. The plane resolves the path to search (`workspace.locate`) and
hands the child an open descriptor of it; the child never names a path.

The walk goes by descriptors only: each directory is opened relative to its
parent, by the name its parent listed, with `O_NOFOLLOW | O_DIRECTORY`, and
each file with `O_NOFOLLOW | O_NONBLOCK`, its type checked on the descriptor.
So a directory swapped for a symlink mid-walk is simply not entered: nothing
leads the walk outside the directory it was handed. Like `grep -r`, the walk
never follows a symlink it meets (name it to search it); `.git` is never
entered. The walk and the line reader are shared with the in-process file
tools, so `list_files`, `read_file` and `grep` agree on order, on line
numbers, and on what is skipped.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import BinaryIO

SKIPPED_DIRS = frozenset({".git"})
BINARY_SNIFF = 8192
MAX_DEPTH = 256
"""Directories deeper than this are not entered (each level holds a descriptor)."""
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


@dataclass(frozen=True)
class Entry:
    rel: str
    """Its path as the model is shown it (workspace-relative)."""
    name: str
    kind: str
    """"dir", "file", "link" or "other" (a FIFO, socket or device), never followed."""
    parent: int
    """The descriptor of the directory holding it, open while the walk is on it."""


def join(base: str, name: str) -> str:
    return name if base == "." else f"{base}/{name}"


def walk(top: int, base: str, *, recursive: bool = True) -> Iterator[Entry]:
    """Every entry under the directory open as `top` (named `base`), depth
    first (a directory, then what is in it), sorted by name at each level.
    Unreadable directories are passed over. `top` stays the caller's."""
    stack: list[tuple[int, str, Iterator[os.DirEntry[str]]]] = [
        (top, base, iter(_sorted_entries(top)))
    ]
    try:
        while stack:
            fd, where, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                if fd != top:
                    os.close(fd)
                continue
            found = Entry(join(where, entry.name), entry.name, _kind(entry), fd)
            yield found
            if not recursive or found.kind != "dir" or entry.name in SKIPPED_DIRS:
                continue
            if len(stack) >= MAX_DEPTH:
                continue
            try:
                sub = os.open(entry.name, DIR_FLAGS, dir_fd=fd)
            except OSError:
                continue  # gone, unreadable, or swapped for a symlink: not entered
            stack.append((sub, found.rel, iter(_sorted_entries(sub))))
    finally:
        for fd, _, _ in stack:
            if fd != top:
                os.close(fd)


def _sorted_entries(directory: int) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda entry: entry.name)
    except OSError:
        return []


def _kind(entry: os.DirEntry[str]) -> str:
    try:
        if entry.is_symlink():
            return "link"
        if entry.is_dir(follow_symlinks=False):
            return "dir"
        return "file" if entry.is_file(follow_symlinks=False) else "other"
    except OSError:
        return "other"


def open_file(parent: int, name: str) -> int | None:
    """A regular file in `parent`, opened without following a symlink or
    blocking on a FIFO; None when it is anything else (or gone)."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=parent)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def matches(rel: str, glob: str | None) -> bool:
    """`glob` matched against the end of the workspace-relative path:
    `*.py` anywhere, `tests/*.py` in any directory named tests."""
    return glob is None or PurePosixPath(rel).match(glob)


def looks_binary(head: bytes) -> bool:
    return b"\x00" in head[:BINARY_SNIFF]


def lines(f: BinaryIO, cap: int) -> Iterator[tuple[str, int]]:
    """(text, full length in bytes) for each line, without its newline; text
    holds at most `cap` bytes, so one enormous line cannot fill memory."""
    while raw := f.readline(cap + 1):
        if raw.endswith(b"\n"):
            yield _text(raw[:-1]), len(raw) - 1
        elif len(raw) <= cap:
            yield _text(raw), len(raw)
        else:
            length = len(raw)
            while more := f.readline(65536):
                if more.endswith(b"\n"):
                    length += len(more) - 1
                    break
                length += len(more)
            yield _text(raw[:cap]), length


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r")


def grep(
    start: int,
    base: str,
    pattern: str,
    *,
    ignore_case: bool,
    glob: str | None,
    max_matches: int,
    max_line: int,
) -> Iterator[str]:
    """`path:line:text` for each matching line under the file or directory
    open as `start` (named `base`), then a marker if the cap hit."""
    regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    found = 0
    for rel, fd in _files(start, base):
        if not matches(rel, glob):
            os.close(fd)
            continue
        with os.fdopen(fd, "rb") as f:
            for number, text in _matching_lines(f, regex):
                if found == max_matches:
                    yield f"[… stopped at {max_matches} matches; narrow the pattern, path or glob]"
                    return
                found += 1
                if len(text) > max_line:
                    text = text[:max_line] + "…"
                yield f"{rel}:{number}:{text}"


def _files(start: int, base: str) -> Iterator[tuple[str, int]]:
    """(path, an open descriptor) for each regular file to search."""
    mode = os.fstat(start).st_mode
    if stat.S_ISREG(mode):
        yield base, os.dup(start)
        return
    if not stat.S_ISDIR(mode):
        return
    for entry in walk(start, base):
        if entry.kind == "file":
            fd = open_file(entry.parent, entry.name)
            if fd is not None:
                yield entry.rel, fd


def _matching_lines(f: BinaryIO, regex: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    with contextlib.suppress(OSError):
        if looks_binary(f.read(BINARY_SNIFF)):
            return
        f.seek(0)
        for number, (text, _) in enumerate(lines(f, 65536), start=1):
            if regex.search(text):
                yield number, text


def main(argv: list[str]) -> int:
    request = json.loads(argv[1])
    out = sys.stdout
    for line in grep(
        request["fd"],
        request["base"],
        request["pattern"],
        ignore_case=request["ignore_case"],
        glob=request["glob"],
        max_matches=request["max_matches"],
        max_line=request["max_line"],
    ):
        out.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
