"""`apply_patch`: a unified diff applied inside the workspace, all or nothing.

A heavy tool (its description teaches a format), so it is loaded only into
sessions that talk about patching or editing. Every file the diff names is
found with `workspace.locate` and read, written or deleted only through the
descriptor of its directory; every hunk is checked against the file before any
file is written, so a diff that half fits changes nothing.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

from pydantic import Field

from plane.errors import ToolError
from plane.tools.base import Args, Tool, ToolContext
from plane.tools.files import write_at
from plane.tools.unidiff import FilePatch, PatchError, apply, parse
from plane.tools.workspace import locate, os_failure, refuse_special


class ApplyPatchArgs(Args):
    patch: str = Field(
        min_length=1,
        max_length=1_000_000,
        description="A unified diff (as `diff -u` or `git diff` print it); paths relative "
        "to your workspace.",
    )


async def apply_patch(args: ApplyPatchArgs, ctx: ToolContext) -> str:
    return await asyncio.to_thread(_apply, ctx.workspace, args.patch)


def _apply(root: Path, text: str) -> str:
    try:
        patches = parse(text)
    except PatchError as error:
        raise ToolError(f"The patch cannot be read: {error}.") from None
    after: dict[str, str | None] = {}
    changes: dict[str, tuple[int, int]] = {}
    for patch in patches:
        source = _where(root, patch.old_path) if patch.old_path else None
        target = _where(root, patch.new_path) if patch.new_path else None
        if source and target and source != target:
            raise ToolError(f"`{patch.path}`: renames are not supported; write the new file.")
        rel = target or source
        assert rel is not None  # parse() refuses /dev/null on both sides
        before = after[rel] if rel in after else _read(root, rel, patch)
        try:
            after[rel] = apply(before, patch)
        except PatchError as error:
            raise ToolError(f"Nothing was changed: {error}.") from None
        added, removed = changes.get(rel, (0, 0))
        changes[rel] = (
            added + sum(hunk.added for hunk in patch.hunks),
            removed + sum(hunk.removed for hunk in patch.hunks),
        )
    for rel, content in after.items():
        _store(root, rel, content)
    return _summary(after, changes)


def _where(root: Path, path: str) -> str:
    """The workspace-relative path `path` lands on (refused if outside)."""
    with locate(root, path) as place:
        return place.rel


def _read(root: Path, rel: str, patch: FilePatch) -> str | None:
    with locate(root, rel) as place:
        before = place.lstat()
        if before is None:
            return None
        if place.name == "." or stat.S_ISDIR(before.st_mode):
            raise ToolError(f"`{patch.path}` is a directory.")
        refuse_special(before.st_mode, patch.path)
        try:
            fd = place.open()
        except OSError as error:
            raise os_failure(error, patch.path) from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise ToolError(f"`{patch.path}` changed while it was read; read it and try again.")
        try:
            return f.read().decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"`{patch.path}` is not UTF-8 text; it cannot be patched.") from None
        except OSError as error:
            raise os_failure(error, patch.path) from None


def _store(root: Path, rel: str, content: str | None) -> None:
    try:
        with locate(root, rel, make_parents=content is not None) as place:
            if content is not None:
                write_at(place, content.encode("utf-8"))
            elif place.parent is not None:
                os.unlink(place.name, dir_fd=place.parent)  # a symlink is removed, not followed
    except OSError as error:
        raise os_failure(error, rel) from None


def _summary(after: dict[str, str | None], changes: dict[str, tuple[int, int]]) -> str:
    parts = []
    for rel, content in after.items():
        added, removed = changes[rel]
        state = "deleted" if content is None else f"+{added} −{removed}"
        parts.append(f"`{rel}` ({state})")
    noun = "file" if len(parts) == 1 else "files"
    return f"Patched {len(parts)} {noun}: " + ", ".join(parts) + "."


TOOL = Tool(
    name="apply_patch",
    description=(
        "Apply a unified diff to files in your workspace: all of it or, if any hunk "
        "does not match, none of it. Each file starts with `--- a/path` and `+++ b/path` "
        "(`/dev/null` to create or delete one); each hunk with `@@ -start,count "
        "+start,count @@`, then lines starting with ` ` (context), `-` (removed) or `+` "
        "(added). Context and removed lines must match the file exactly; hunks may have "
        "moved. Read the file first; no renames or binary files."
    ),
    args=ApplyPatchArgs,
    run=apply_patch,
    keywords=("patch", "diff", "refactor", "edit"),
)
