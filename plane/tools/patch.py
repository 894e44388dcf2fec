"""`apply_patch`: a unified diff applied inside the workspace, all or nothing.

A heavy tool (its description teaches a format), so it is loaded only into
sessions that talk about patching or editing. Every file the diff names goes
through `resolve_inside`; every hunk is checked against the file before any
file is written, so a diff that half fits changes nothing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import Field

from plane.errors import ToolError
from plane.tools.base import Args, Tool, ToolContext
from plane.tools.files import write_bytes
from plane.tools.unidiff import FilePatch, PatchError, apply, parse
from plane.tools.workspace import os_failure, refuse_special, relative, resolve_inside


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
    after: dict[Path, str | None] = {}
    changes: dict[Path, tuple[int, int]] = {}
    for patch in patches:
        source = resolve_inside(root, patch.old_path) if patch.old_path else None
        target = resolve_inside(root, patch.new_path) if patch.new_path else None
        if source and target and source != target:
            raise ToolError(f"`{patch.path}`: renames are not supported; write the new file.")
        real = target or source
        assert real is not None  # parse() refuses /dev/null on both sides
        before = after[real] if real in after else _read(real, patch)
        try:
            after[real] = apply(before, patch)
        except PatchError as error:
            raise ToolError(f"Nothing was changed: {error}.") from None
        added, removed = changes.get(real, (0, 0))
        changes[real] = (
            added + sum(hunk.added for hunk in patch.hunks),
            removed + sum(hunk.removed for hunk in patch.hunks),
        )
    for real, content in after.items():
        _store(real, content, relative(root, real))
    return _summary(root, after, changes)


def _read(real: Path, patch: FilePatch) -> str | None:
    if real.is_dir():
        raise ToolError(f"`{patch.path}` is a directory.")
    refuse_special(real, patch.path)
    try:
        return real.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise ToolError(f"`{patch.path}` is not UTF-8 text; it cannot be patched.") from None
    except OSError as error:
        raise os_failure(error, patch.path) from None


def _store(real: Path, content: str | None, shown_as: str) -> None:
    try:
        if content is None:
            real.unlink()
        else:
            real.parent.mkdir(parents=True, exist_ok=True)
            write_bytes(real, content.encode("utf-8"))
    except OSError as error:
        raise os_failure(error, shown_as) from None


def _summary(
    root: Path, after: dict[Path, str | None], changes: dict[Path, tuple[int, int]]
) -> str:
    parts = []
    for real, content in after.items():
        added, removed = changes[real]
        state = "deleted" if content is None else f"+{added} −{removed}"
        parts.append(f"`{relative(root, real)}` ({state})")
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
