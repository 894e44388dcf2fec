"""The ref store's inbox: what a shell command removed, one file a call, until the store takes it.

`plane compress` runs once per shell call, and opening the SQLite store for
it cost more than compressing a 100 KB output: loading sqlite3, then, being
the store's only connection, SQLite syncing a new write-ahead log to disk and
checkpointing it when the connection closed (10-25 ms on a busy disk). So a
shell command posts its refs as one file in the inbox beside the store, and
whoever opens the store next (`plane retrieve`, `plane expand`, the plane
itself, or the store asked for a ref it does not hold yet) takes the inbox in,
in one transaction, and deletes the files it took.

What it guarantees:

- A ref printed is retrievable once the command has exited, from any process:
  the file is in the inbox before the text is printed.
- A crash never damages the store. The file is written under a temporary name
  and renamed into place, so no reader sees half of it; it is not synced to
  disk, so a power cut may lose the last calls' refs (their markers then read
  as expired, and compressing the output again gives them back). Every entry is
  checked against its ref, which is the hash of its content, when it is read:
  a file cut short or garbled loses its own entries, and nothing else.

The format: a header line, then for each ref `<ref> <stored_at> <bytes>\\n`,
the content's UTF-8 bytes and a newline.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping

from plane.economy.compress.markers import ref_of

TYPE_CHECKING = False  # typing's guard, without importing typing: see plane.tuples
if TYPE_CHECKING:
    from pathlib import Path
    from typing import TypeVar

    StorePath = TypeVar("StorePath", str, Path)

_HEADER = b"plane refs 1\n"
CROWDED = 64
"""Files in the inbox past which the command that posts takes the inbox into the store
itself, so that the inbox stays small when nothing else opens the store."""
_DRAFT = "."  # a file still being written (or left by a command that died writing it)


def of(store: StorePath) -> StorePath:
    """The inbox of the store at `store` (`refs.db` → `refs.inbox`), a path as the store's is
    (`plane compress` names its store as a string: it never loads pathlib)."""
    return type(store)(os.path.splitext(store)[0] + ".inbox")


def post(inbox: str | Path, refs: Mapping[str, str], now: float | None = None) -> int:
    """Post refs as one file; returns how many files the inbox holds now."""
    at = repr(time.time() if now is None else now)
    parts = [_HEADER]
    for ref, content in refs.items():
        data = content.encode("utf-8", "surrogatepass")
        parts += (f"{ref} {at} {len(data)}\n".encode("ascii"), data, b"\n")
    try:
        os.mkdir(inbox, 0o700)
    except OSError:  # as Path.mkdir(exist_ok=True): any error, unless the directory is there
        if not os.path.isdir(inbox):
            raise
    name = f"{time.time_ns():x}-{os.getpid()}"
    draft = os.path.join(inbox, _DRAFT + name)
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with open(fd, "wb") as file:
        file.write(b"".join(parts))
    os.replace(draft, os.path.join(inbox, name))
    return len(os.listdir(inbox))


def posted(inbox: Path, stale_before: float) -> list[Path]:
    """The inbox's whole files, oldest first. Drafts older than `stale_before` (left by a
    command that died writing them) are deleted on the way."""
    from pathlib import Path  # here: the command that posts never reads, nor loads pathlib

    try:
        found = list(os.scandir(inbox))
    except (FileNotFoundError, NotADirectoryError):
        return []
    whole = []
    for entry in found:
        if not entry.is_file(follow_symlinks=False):
            continue  # not one of ours
        if not entry.name.startswith(_DRAFT):
            whole.append(Path(entry.path))
        elif _mtime(entry) < stale_before:
            discard([Path(entry.path)])
    return sorted(whole, key=lambda path: path.name)


def _mtime(entry: os.DirEntry[str]) -> float:
    try:
        return entry.stat(follow_symlinks=False).st_mtime
    except FileNotFoundError:
        return float("inf")


def entries(path: Path) -> Iterator[tuple[str, bytes, float]]:
    """(ref, content bytes, stored_at) of each entry whose content matches its ref (one that
    does not is skipped); reading stops where an entry is cut short or its line garbled."""
    from math import isfinite  # here: the command that posts never reads, nor loads math

    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        return
    if not data.startswith(_HEADER):
        return
    pos = len(_HEADER)
    while pos < len(data):
        head_end = data.find(b"\n", pos)
        if head_end < 0:
            return
        try:
            ref, at, size = data[pos:head_end].decode("ascii").split(" ")
            stored_at, length = float(at), int(size)
        except ValueError:  # UnicodeDecodeError is one
            return
        start, end = head_end + 1, head_end + 1 + length
        if length < 0 or not isfinite(stored_at) or data[end : end + 1] != b"\n":
            return
        content = data[start:end]
        if ref_of(content) == ref:
            yield ref, content, stored_at
        pos = end + 1


def discard(paths: list[Path]) -> None:
    """Delete files another process may have deleted first."""
    for path in paths:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
