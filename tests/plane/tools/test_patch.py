"""apply_patch and the unified-diff engine under it."""

from __future__ import annotations

import difflib
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plane.tools import unidiff
from plane.tools.registry import TOOLS
from tests.support.fixtures_examples import examples

from .conftest import Run


def _diff(old: str, new: str, path: str = "f.txt", context: int = 3) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            f"a/{path}",
            f"b/{path}",
            n=context,
        )
    )


def _apply_text(old: str | None, patch: str) -> str | None:
    (file_patch,) = unidiff.parse(patch)
    return unidiff.apply(old, file_patch)


LINES = st.lists(
    st.sampled_from(["alpha", "beta", "gamma", "", "  indented", "x = 1"]), max_size=30
)


@settings(max_examples=examples(300), deadline=None)
@given(old=LINES, new=LINES, context=st.integers(0, 4))
def test_any_difflib_diff_applies_back_to_its_new_text(old, new, context):
    before = "".join(line + "\n" for line in old)
    after = "".join(line + "\n" for line in new)
    patch = _diff(before, after, context=context)
    if not patch:
        return
    assert _apply_text(before, patch) == after


def test_hunks_that_moved_are_found_nearest_where_they_were_said_to_be():
    before = "".join(f"line {n}\n" for n in range(1, 41))
    after = before.replace("line 30\n", "line thirty\n")
    patch = _diff(before, after)
    shifted = "header\nheader\n" + before  # two lines were added above since
    assert _apply_text(shifted, patch) == "header\nheader\n" + after


def test_a_hunk_that_does_not_match_is_refused():
    patch = _diff("a\nb\nc\n", "a\nB\nc\n")
    with pytest.raises(unidiff.PatchError, match=r"hunk 1 of `f.txt` \(@@ -1,3 \+1,3 @@\)"):
        _apply_text("a\nX\nc\n", patch)


def test_pure_insertions_land_after_the_line_they_name():
    patch = "--- a/f\n+++ b/f\n@@ -2,0 +3,1 @@\n+inserted\n"
    assert _apply_text("one\ntwo\nthree\n", patch) == "one\ntwo\ninserted\nthree\n"
    patch = "--- a/f\n+++ b/f\n@@ -0,0 +1,1 @@\n+first\n"
    assert _apply_text("one\n", patch) == "first\none\n"


def test_real_diff_output_without_final_newlines_round_trips(tmp_path: Path):
    old, new = tmp_path / "old", tmp_path / "new"
    for before, after in [
        ("a\nb", "a\nc"),
        ("a\nb\n", "a\nb"),
        ("a\nb", "a\nb\n"),
        ("", "hello"),
    ]:
        old.write_text(before)
        new.write_text(after)
        patch = subprocess.run(
            ["diff", "-u", str(old), str(new)], capture_output=True, text=True, check=False
        ).stdout
        assert _apply_text(before, patch) == after, (before, after, patch)


def test_crlf_files_keep_their_line_endings():
    patch = _diff("a\nb\nc\n", "a\nB\nc\n")
    assert _apply_text("a\r\nb\r\nc\r\n", patch) == "a\r\nB\r\nc\r\n"


def test_form_feeds_inside_lines_are_not_line_breaks():
    patch = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n x\x0cy\n-z\n+Z\n"
    assert _apply_text("x\x0cy\nz\n", patch) == "x\x0cy\nZ\n"


@pytest.mark.parametrize(
    ("patch", "says"),
    [
        ("just some words", "no `--- ` / `+++ ` file header found"),
        ("@@ -1 +1 @@\n-a\n+b\n", "comes before any `--- ` / `+++ ` header"),
        ("--- a/f\n+++ b/f\n", "`f` has a header but no hunks"),
        ("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+b\n", "ends before its line counts"),
        ("--- a/f\n+++ b/f\n@@ nonsense @@\n", "is not a hunk header"),
        ("--- a/f\n+++ b/f\n@@ -1 +1 @@\n*a\n+b\n", "starts with no ` `, - or +"),
        (
            "diff --git a/x b/y\nrename from x\nrename to y\n",
            "renames and copies are not supported",
        ),
        ("--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n", "/dev/null on both sides"),
    ],
)
def test_unreadable_patches_say_why(patch: str, says: str):
    with pytest.raises(unidiff.PatchError) as refused:
        unidiff.parse(patch)
    assert says in str(refused.value)


# The tool


def _staged_diff_then_reset(workspace: Path) -> str:
    """Commit the workspace as it was first written, apply the edits the test
    describes, take git's own diff of them, and put the files back."""
    git = ["git", "-C", str(workspace), "-c", "user.email=t@t", "-c", "user.name=t"]
    git += ["-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    (workspace / "src" / "app.py").write_text("def main():\n    return 2\n")
    (workspace / "new.txt").write_text("hello\n")
    (workspace / "old.txt").unlink()
    subprocess.run([*git, "add", "-A"], check=True)
    patch = subprocess.run(
        [*git, "diff", "--cached", "--no-renames"], capture_output=True, text=True, check=True
    ).stdout
    subprocess.run([*git, "reset", "-q", "--hard"], check=True)
    return patch


async def test_apply_patch_edits_creates_and_deletes_files_from_a_real_git_diff(
    run: Run, workspace: Path
):
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("def main():\n    return 1\n")
    (workspace / "old.txt").write_text("bye\n")
    patch = _staged_diff_then_reset(workspace)
    assert (workspace / "old.txt").exists() and not (workspace / "new.txt").exists()

    result = await run("apply_patch", patch=patch)

    assert result.ok, result.text
    assert result.text == (
        "Patched 3 files: `new.txt` (+1 −0), `old.txt` (deleted), `src/app.py` (+1 −1)."
    )
    assert (workspace / "src" / "app.py").read_text() == "def main():\n    return 2\n"
    assert (workspace / "new.txt").read_text() == "hello\n"
    assert not (workspace / "old.txt").exists()


async def test_apply_patch_is_all_or_nothing(run: Run, workspace: Path):
    (workspace / "a.txt").write_text("one\ntwo\n")
    (workspace / "b.txt").write_text("three\nfour\n")
    patch = _diff("one\ntwo\n", "one\n2\n", "a.txt") + _diff("THREE\nfour\n", "3\nfour\n", "b.txt")
    result = await run("apply_patch", patch=patch)
    assert not result.ok
    assert result.text.startswith("Nothing was changed: hunk 1 of `b.txt` (@@ -1,2 +1,2 @@)")
    assert (workspace / "a.txt").read_text() == "one\ntwo\n"
    assert (workspace / "b.txt").read_text() == "three\nfour\n"


async def test_apply_patch_is_confined(run: Run, workspace: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("x\n")
    (workspace / "link").symlink_to(outside)
    for target in ["../outside/x.txt", "link/x.txt", str(outside / "x.txt")]:
        patch = f"--- a/{target}\n+++ b/{target}\n@@ -1 +1 @@\n-x\n+pwned\n"
        if target.startswith("/"):
            patch = f"--- {target}\n+++ {target}\n@@ -1 +1 @@\n-x\n+pwned\n"
        result = await run("apply_patch", patch=patch)
        assert not result.ok
        assert result.text.endswith("is outside the workspace."), result.text
    created = "--- /dev/null\n+++ b/../outside/new.txt\n@@ -0,0 +1 @@\n+pwned\n"
    assert not (await run("apply_patch", patch=created)).ok
    assert sorted(os.listdir(outside)) == ["x.txt"]
    assert (outside / "x.txt").read_text() == "x\n"


async def test_apply_patch_refuses_to_create_over_an_existing_file(run: Run, workspace: Path):
    (workspace / "here.txt").write_text("keep\n")
    result = await run("apply_patch", patch="--- /dev/null\n+++ b/here.txt\n@@ -0,0 +1 @@\n+new\n")
    assert (result.ok, result.text) == (
        False,
        "Nothing was changed: `here.txt` already exists; the patch creates it.",
    )
    assert (workspace / "here.txt").read_text() == "keep\n"


async def test_apply_patch_on_a_missing_file_or_binary_says_so(run: Run, workspace: Path):
    result = await run("apply_patch", patch=_diff("a\n", "b\n", "nope.txt"))
    assert (result.ok, result.text) == (False, "Nothing was changed: `nope.txt` does not exist.")
    (workspace / "bin.dat").write_bytes(b"\xff\xfe\x00")
    result = await run("apply_patch", patch=_diff("a\n", "b\n", "bin.dat"))
    assert (result.ok, result.text) == (False, "`bin.dat` is not UTF-8 text; it cannot be patched.")


def test_apply_patch_is_a_heavy_tool():
    assert TOOLS["apply_patch"].keywords
