"""`read_file`, `write_file`, `list_files`: the workspace's files, confined.

Each tool finds its path with `workspace.locate` and then touches the disk
only through the descriptors it holds (no path is opened twice by name, so no
symlink swap can redirect it), in a thread, so a large file never stalls the
plane's event loop. Output
is bounded by lines and by bytes, and whenever less than everything is shown a
trailer says what is missing and how to get it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from pydantic import Field

from plane.errors import ToolError
from plane.tools.base import Args, Tool, ToolContext
from plane.tools.scan import BINARY_SNIFF, Entry, lines, looks_binary, matches, walk
from plane.tools.workspace import DIR_FLAGS, Place, locate, os_failure, refuse_special, shown

READ_CAP_BYTES = 64 * 1024
LINE_CAP = 4000
DEFAULT_LINES = 2000
LIST_CAP = 500


class ReadFileArgs(Args):
    path: str = Field(description="The file, relative to your workspace.")
    offset: int = Field(default=1, ge=1, description="The first line to show (1 = the first).")
    limit: int = Field(
        default=DEFAULT_LINES, ge=1, le=10_000, description="How many lines to show at most."
    )


async def read_file(args: ReadFileArgs, ctx: ToolContext) -> str:
    return await asyncio.to_thread(_read, ctx.workspace, args)


def _read(root: Path, args: ReadFileArgs) -> str:
    with locate(root, args.path) as place:
        fd = _open_to_read(place, args.path)
    with os.fdopen(fd, "rb") as f:
        try:
            head = f.read(BINARY_SNIFF)
            if looks_binary(head):
                size = os.fstat(f.fileno()).st_size
                raise ToolError(
                    f"{shown(args.path)} looks binary ({size:,} bytes); read_file shows text."
                )
            f.seek(0)
            return _page(f, args)
        except OSError as error:
            raise os_failure(error, args.path) from None


def _open_to_read(place: Place, path: str) -> int:
    """The regular file at `place`, open; its type is checked on the descriptor."""
    if place.lstat() is None:
        raise ToolError(f"{shown(path)} does not exist.")
    try:
        fd = place.open()
    except OSError as error:
        raise os_failure(error, path) from None
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode):
        return fd
    os.close(fd)
    if stat.S_ISDIR(mode):
        raise ToolError(f"{shown(path)} is a directory; list_files shows what is in it.")
    refuse_special(mode, path)
    raise AssertionError("refuse_special refuses what is neither a file nor a directory")


def _page(f: BinaryIO, args: ReadFileArgs) -> str:
    total = _count_lines(f)
    if total == 0:
        return f"({shown(args.path)} is empty.)"
    if args.offset > total:
        raise ToolError(
            f"{shown(args.path)} has {total:,} lines; offset {args.offset:,} is past its end."
        )
    f.seek(0)
    page: list[str] = []
    size = 0
    for number, (text, length) in enumerate(lines(f, LINE_CAP), start=1):
        if number < args.offset:
            continue
        if length > LINE_CAP:
            text += f" [… line cut at {LINE_CAP:,} of {length:,} bytes]"
        cost = len(text.encode()) + 1
        if len(page) == args.limit or (page and size + cost > READ_CAP_BYTES):
            break
        page.append(text)
        size += cost
    last = args.offset + len(page) - 1
    body = "\n".join(page)
    if args.offset == 1 and last == total:
        return body
    trailer = f"[lines {args.offset:,}–{last:,} of {total:,}"
    if last < total:
        trailer += f"; read on with offset={last + 1}"
    return f"{body}\n{trailer}]"


def _count_lines(f: BinaryIO) -> int:
    """Lines as `lines()` yields them: a final line without a newline counts."""
    count = 0
    tail = b"\n"
    while chunk := f.read(1 << 20):
        count += chunk.count(b"\n")
        tail = chunk[-1:]
    return count + (tail != b"\n")


class WriteFileArgs(Args):
    path: str = Field(
        description="The file, relative to your workspace. Missing directories are created."
    )
    content: str = Field(
        max_length=4_000_000, description="The whole new content of the file (UTF-8 text)."
    )


async def write_file(args: WriteFileArgs, ctx: ToolContext) -> str:
    return await asyncio.to_thread(_write, ctx.workspace, args)


def _write(root: Path, args: WriteFileArgs) -> str:
    data = args.content.encode("utf-8", errors="replace")
    with locate(root, args.path, make_parents=True) as place:
        before = place.lstat()
        if place.name == "." or (before and stat.S_ISDIR(before.st_mode)):
            raise ToolError(f"{shown(args.path)} is a directory; give a file path.")
        if before is not None:
            refuse_special(before.st_mode, args.path)
        try:
            write_at(place, data)
        except OSError as error:
            raise os_failure(error, args.path) from None
    verb = "Replaced" if before is not None else "Created"
    count = args.content.count("\n") + (0 if args.content.endswith("\n") or not data else 1)
    return f"{verb} {shown(place.rel)}: {len(data):,} bytes, {count:,} lines."


def write_at(place: Place, data: bytes) -> None:
    """Write through a new temporary file renamed into place, so a crash
    mid-write leaves the old content or the new one, never half of each. Both
    are named relative to the directory's descriptor: the temporary is created
    exclusively and never through a symlink, and the rename replaces a symlink
    rather than writing where it points."""
    if place.parent is None:
        raise FileNotFoundError(2, "missing directory")
    _write_in(place.parent, place.name, data)


def write_bytes(path: Path, data: bytes) -> None:
    """`write_at` for a file the plane names itself (its directory trusted)."""
    parent = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _write_in(parent, path.name, data)
    finally:
        os.close(parent)


def _write_in(parent: int, name: str, data: bytes) -> None:
    temporary = f".plane-write-{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o666, dir_fd=parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            with contextlib.suppress(FileNotFoundError):
                before = os.stat(name, dir_fd=parent, follow_symlinks=False)
                if stat.S_ISREG(before.st_mode):
                    os.fchmod(f.fileno(), before.st_mode & 0o7777)
        os.rename(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=parent)


class ListFilesArgs(Args):
    path: str = Field(default=".", description="The directory, relative to your workspace.")
    glob: str | None = Field(
        default=None,
        max_length=200,
        description="Only entries whose path ends like this, e.g. `*.py` or `tests/*.py`.",
    )
    recursive: bool = Field(
        default=False, description="Also list what is inside subdirectories (never `.git`)."
    )


async def list_files(args: ListFilesArgs, ctx: ToolContext) -> str:
    return await asyncio.to_thread(_list, ctx.workspace, args)


def _list(root: Path, args: ListFilesArgs) -> str:
    with locate(root, args.path) as place:
        before = place.lstat()
        if before is None:
            raise ToolError(f"{shown(args.path)} does not exist.")
        if not stat.S_ISDIR(before.st_mode):
            raise ToolError(f"{shown(args.path)} is a file, not a directory; read_file reads it.")
        try:
            fd = place.open(DIR_FLAGS)
        except OSError as error:
            raise os_failure(error, args.path) from None
    try:
        found = _listing(walk(fd, place.rel, recursive=args.recursive), args.glob)
    finally:
        os.close(fd)
    if not found:
        where = shown(place.rel)
        return f"(Nothing in {where} matches {args.glob}.)" if args.glob else f"({where} is empty.)"
    return "\n".join(found)


def _listing(entries: Iterator[Entry], glob: str | None) -> list[str]:
    found: list[str] = []
    for entry in entries:
        if not matches(entry.rel, glob):
            continue
        if len(found) == LIST_CAP:
            found.append(f"[… stopped at {LIST_CAP} entries; narrow it with path or glob]")
            break
        found.append(entry.rel + MARKS.get(entry.kind, ""))
    return found


MARKS = {"dir": "/", "link": "@"}
"""`ls -F` marks: `/` for a directory, `@` for a symlink (never followed)."""


READ = Tool(
    name="read_file",
    description=(
        "Read a text file in your workspace. Shows up to `limit` lines from `offset` "
        "(at most 64 KB); a trailer says when there is more and where to read on."
    ),
    args=ReadFileArgs,
    run=read_file,
    changes_nothing=True,
)
WRITE = Tool(
    name="write_file",
    description=(
        "Write a file in your workspace, replacing it if it exists; missing directories "
        "are created. `content` is the whole file."
    ),
    args=WriteFileArgs,
    run=write_file,
)
LIST = Tool(
    name="list_files",
    description=(
        "List a directory in your workspace, sorted; directories end in `/`, symlinks "
        f"in `@`. At most {LIST_CAP} entries."
    ),
    args=ListFilesArgs,
    run=list_files,
    changes_nothing=True,
)
