"""Walking a workspace and searching it. Standard library only, on purpose.

`grep` runs this file as a child process (`python -I scan.py '<json>'`)
rather than in a thread: a regular expression can backtrack for hours, a
thread cannot be stopped, and a process can. The walk and the line reader are
shared with the in-process file tools, so `list_files`, `read_file` and `grep`
agree on order, on line numbers, and on what is skipped: `.git` is never
entered, symlinked directories are never followed, and a symlinked file is
searched only when it resolves inside the workspace.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import BinaryIO

SKIPPED_DIRS = frozenset({".git"})
BINARY_SNIFF = 8192


def walk(top: str) -> Iterator[os.DirEntry[str]]:
    """Every entry under `top`, depth first (a directory, then what is in it),
    sorted by name at each level. Unreadable directories are passed over."""
    stack = [iter(_sorted_entries(top))]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        yield entry
        if entry.name not in SKIPPED_DIRS and _is_dir(entry):
            stack.append(iter(_sorted_entries(entry.path)))


def _sorted_entries(directory: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda entry: entry.name)
    except OSError:
        return []


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


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
    root: str,
    start: str,
    pattern: str,
    *,
    ignore_case: bool,
    glob: str | None,
    max_matches: int,
    max_line: int,
) -> Iterator[str]:
    """`path:line:text` for each matching line, then a marker if the cap hit."""
    regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    found = 0
    for path in _files(root, start):
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        if not matches(rel, glob):
            continue
        for number, text in _matching_lines(path, regex):
            if found == max_matches:
                yield f"[… stopped at {max_matches} matches; narrow the pattern, path or glob]"
                return
            found += 1
            if len(text) > max_line:
                text = text[:max_line] + "…"
            yield f"{rel}:{number}:{text}"


def _files(root: str, start: str) -> Iterator[str]:
    if not os.path.isdir(start):
        if os.path.isfile(start):  # a regular file: never a FIFO that would block
            yield start
        return
    for entry in walk(start):
        if entry.is_file(follow_symlinks=False):
            yield entry.path
        elif entry.is_symlink():
            real = os.path.realpath(entry.path)
            if os.path.isfile(real) and _inside(real, root):
                yield entry.path


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _matching_lines(path: str, regex: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    try:
        with open(path, "rb") as f:
            if looks_binary(f.read(BINARY_SNIFF)):
                return
            f.seek(0)
            for number, (text, _) in enumerate(lines(f, 65536), start=1):
                if regex.search(text):
                    yield number, text
    except OSError:
        return


def main(argv: list[str]) -> int:
    request = json.loads(argv[1])
    out = sys.stdout
    for line in grep(
        request["root"],
        request["start"],
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
