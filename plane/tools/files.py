"""`read_file`, `write_file`, `list_files`: the workspace's files, confined.

Each tool resolves its path through `resolve_inside` first and does its disk
work in a thread, so a large file never stalls the plane's event loop. Output
is bounded by lines and by bytes, and whenever less than everything is shown a
trailer says what is missing and how to get it.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path
from typing import BinaryIO

from pydantic import Field

from plane.errors import ToolError
from plane.tools.base import Args, Tool, ToolContext
from plane.tools.scan import BINARY_SNIFF, lines, looks_binary, matches, walk
from plane.tools.workspace import os_failure, refuse_special, relative, resolve_inside, shown

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
    real = resolve_inside(root, args.path)
    if real.is_dir():
        raise ToolError(f"{shown(args.path)} is a directory; list_files shows what is in it.")
    refuse_special(real, args.path)
    try:
        with open(real, "rb") as f:
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
    real = resolve_inside(root, args.path)
    if real.is_dir():
        raise ToolError(f"{shown(args.path)} is a directory; give a file path.")
    refuse_special(real, args.path)
    existed = real.exists()
    data = args.content.encode("utf-8", errors="replace")
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(real, data)
    except OSError as error:
        raise os_failure(error, args.path) from None
    verb = "Replaced" if existed else "Created"
    count = args.content.count("\n") + (0 if args.content.endswith("\n") or not data else 1)
    return f"{verb} {shown(relative(root, real))}: {len(data):,} bytes, {count:,} lines."


def write_bytes(real: Path, data: bytes) -> None:
    """Write through a new temporary file renamed into place, so a crash
    mid-write leaves the old content or the new one, never half of each. The
    temporary is created exclusively and never through a symlink, and the
    rename replaces a symlink rather than writing where it points."""
    temporary = real.with_name(f".plane-write-{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    fd = os.open(temporary, flags, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if real.exists():
            os.chmod(temporary, real.stat().st_mode & 0o7777)
        os.replace(temporary, real)
    finally:
        temporary.unlink(missing_ok=True)


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
    real = resolve_inside(root, args.path)
    if not real.exists():
        raise ToolError(f"{shown(args.path)} does not exist.")
    if not real.is_dir():
        raise ToolError(f"{shown(args.path)} is a file, not a directory; read_file reads it.")
    try:
        entries = walk(str(real)) if args.recursive else _children(real)
    except OSError as error:
        raise os_failure(error, args.path) from None
    found: list[str] = []
    for entry in entries:
        rel = relative(root, Path(entry.path))
        if not matches(rel, args.glob):
            continue
        if len(found) == LIST_CAP:
            found.append(f"[… stopped at {LIST_CAP} entries; narrow it with path or glob]")
            break
        found.append(rel + _kind(entry))
    if not found:
        where = shown(relative(root, real))
        return f"(Nothing in {where} matches {args.glob}.)" if args.glob else f"({where} is empty.)"
    return "\n".join(found)


def _children(directory: Path) -> list[os.DirEntry[str]]:
    with os.scandir(directory) as it:
        return sorted(it, key=lambda entry: entry.name)


def _kind(entry: os.DirEntry[str]) -> str:
    """`ls -F` marks: `/` for a directory, `@` for a symlink (never followed)."""
    if entry.is_symlink():
        return "@"
    return "/" if entry.is_dir(follow_symlinks=False) else ""


READ = Tool(
    name="read_file",
    description=(
        "Read a text file in your workspace. Shows up to `limit` lines from `offset` "
        "(at most 64 KB); a trailer says when there is more and where to read on."
    ),
    args=ReadFileArgs,
    run=read_file,
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
)
