"""read_file, write_file, list_files on real files, confined."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plane.tools import files

from .conftest import Run


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    place = tmp_path / "outside"
    place.mkdir()
    (place / "secret.txt").write_text("the secret\n")
    return place


# read_file


async def test_read_file_returns_the_text_as_it_is(run: Run, workspace: Path):
    (workspace / "notes.txt").write_text("one\ntwo\nthree\n")
    result = await run("read_file", path="notes.txt")
    assert result.ok
    assert result.text == "one\ntwo\nthree"


async def test_read_file_pages_by_lines_and_says_where_to_read_on(run: Run, workspace: Path):
    (workspace / "long.txt").write_text("".join(f"l{n}\n" for n in range(1, 11)))
    result = await run("read_file", path="long.txt", offset=3, limit=4)
    assert result.text == "l3\nl4\nl5\nl6\n[lines 3–6 of 10; read on with offset=7]"
    result = await run("read_file", path="long.txt", offset=7)
    assert result.text == "l7\nl8\nl9\nl10\n[lines 7–10 of 10]"


async def test_read_file_caps_bytes_and_cuts_monster_lines(run: Run, workspace: Path):
    line = "x" * 3000
    (workspace / "wide.txt").write_text((line + "\n") * 100 + "y" * 50_000 + "\n")
    result = await run("read_file", path="wide.txt")
    assert len(result.text) <= files.READ_CAP_BYTES + 200
    shown = result.text.splitlines()
    assert shown[:21] == [line] * 21  # 64 KB of 3001-byte lines
    assert shown[-1] == "[lines 1–21 of 101; read on with offset=22]"
    result = await run("read_file", path="wide.txt", offset=101)
    assert result.text.startswith("y" * 4000 + " [… line cut at 4,000 of 50,000 bytes]")


async def test_read_file_refusals(run: Run, workspace: Path, outside: Path):
    (workspace / "empty.txt").write_text("")
    (workspace / "blob.bin").write_bytes(b"\x7fELF\x00\x00\x01")
    (workspace / "dir").mkdir()
    (workspace / "short.txt").write_text("a\nb\n")
    (workspace / "escape").symlink_to(outside / "secret.txt")
    cases = {
        "missing.txt": "`missing.txt` does not exist.",
        "blob.bin": "`blob.bin` looks binary (7 bytes); read_file shows text.",
        "dir": "`dir` is a directory; list_files shows what is in it.",
        "escape": "`escape` is outside the workspace.",
        "../outside/secret.txt": "`../outside/secret.txt` is outside the workspace.",
        str(outside / "secret.txt"): "is outside the workspace.",
    }
    for path, says in cases.items():
        result = await run("read_file", path=path)
        assert not result.ok, path
        assert result.text.endswith(says), result.text
    assert (await run("read_file", path="empty.txt")).text == "(`empty.txt` is empty.)"
    past = await run("read_file", path="short.txt", offset=5)
    assert not past.ok
    assert past.text == "`short.txt` has 2 lines; offset 5 is past its end."


async def test_read_file_reports_a_symlink_loop(run: Run, workspace: Path):
    (workspace / "loop").symlink_to("loop")
    result = await run("read_file", path="loop")
    assert not result.ok
    assert result.text == "`loop` is a symlink loop."


async def test_read_file_through_an_inside_symlink_works(run: Run, workspace: Path):
    (workspace / "real").mkdir()
    (workspace / "real" / "a.txt").write_text("found\n")
    (workspace / "alias").symlink_to("real")
    assert (await run("read_file", path="alias/a.txt")).text == "found"


# write_file


async def test_write_file_creates_parents_and_reports_what_it_did(run: Run, workspace: Path):
    result = await run("write_file", path="a/b/c.txt", content="hello\nworld\n")
    assert result.ok
    assert result.text == "Created `a/b/c.txt`: 12 bytes, 2 lines."
    assert (workspace / "a" / "b" / "c.txt").read_text() == "hello\nworld\n"
    result = await run("write_file", path="a/b/c.txt", content="über")
    assert result.text == "Replaced `a/b/c.txt`: 5 bytes, 1 lines."
    assert (workspace / "a" / "b" / "c.txt").read_bytes() == "über".encode()
    assert sorted(os.listdir(workspace / "a" / "b")) == ["c.txt"]  # no temporary left


async def test_write_file_keeps_the_mode_of_the_file_it_replaces(run: Run, workspace: Path):
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    await run("write_file", path="run.sh", content="#!/bin/sh\necho hi\n")
    assert script.stat().st_mode & 0o777 == 0o755


async def test_write_file_never_writes_outside(run: Run, workspace: Path, outside: Path):
    (workspace / "to_outside").symlink_to(outside)
    (workspace / "to_secret").symlink_to(outside / "secret.txt")
    (workspace / "dangling").symlink_to(outside / "new.txt")
    for path in [
        "../outside/x.txt",
        str(outside / "x.txt"),
        "to_outside/x.txt",
        "to_secret",
        "dangling",
        "a/../../outside/x.txt",
    ]:
        result = await run("write_file", path=path, content="pwned")
        assert not result.ok
        assert result.text.endswith("is outside the workspace."), path
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "the secret\n"
    assert not (workspace / "a").exists()


async def test_write_file_refuses_a_directory(run: Run, workspace: Path):
    (workspace / "d").mkdir()
    result = await run("write_file", path="d", content="x")
    assert (result.ok, result.text) == (False, "`d` is a directory; give a file path.")
    result = await run("write_file", path=".", content="x")
    assert not result.ok


async def test_write_file_through_a_file_used_as_a_directory_says_so(run: Run, workspace: Path):
    (workspace / "plain").write_text("x")
    result = await run("write_file", path="plain/child.txt", content="x")
    assert not result.ok
    assert result.text.startswith("`plain/child.txt` ")


# list_files


@pytest.fixture
def project(workspace: Path, outside: Path) -> Path:
    for path in ["README.md", "src/app.py", "src/util.py", "src/deep/x.py", "tests/test_app.py"]:
        (workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace / path).write_text("x\n")
    (workspace / ".git" / "objects").mkdir(parents=True)
    (workspace / ".git" / "HEAD").write_text("ref\n")
    (workspace / "elsewhere").symlink_to(outside)
    return workspace


async def test_list_files_lists_one_level_sorted_with_kinds(run: Run, project: Path):
    result = await run("list_files")
    assert result.text == "\n".join([".git/", "README.md", "elsewhere@", "src/", "tests/"])


async def test_list_files_recursive_walks_in_order_skipping_git_and_symlinked_dirs(
    run: Run, project: Path
):
    result = await run("list_files", recursive=True)
    assert result.text.splitlines() == [
        ".git/",
        "README.md",
        "elsewhere@",
        "src/",
        "src/app.py",
        "src/deep/",
        "src/deep/x.py",
        "src/util.py",
        "tests/",
        "tests/test_app.py",
    ]


async def test_list_files_glob_and_subdirectory(run: Run, project: Path):
    result = await run("list_files", path="src", glob="*.py", recursive=True)
    assert result.text.splitlines() == ["src/app.py", "src/deep/x.py", "src/util.py"]
    result = await run("list_files", glob="tests/*.py", recursive=True)
    assert result.text == "tests/test_app.py"
    result = await run("list_files", glob="*.rs", recursive=True)
    assert result.text == "(Nothing in `.` matches *.rs.)"


async def test_list_files_is_capped(run: Run, workspace: Path):
    (workspace / "many").mkdir()
    for n in range(files.LIST_CAP + 20):
        (workspace / "many" / f"f{n:04d}").touch()
    lines = (await run("list_files", path="many")).text.splitlines()
    assert len(lines) == files.LIST_CAP + 1
    assert lines[-1] == f"[… stopped at {files.LIST_CAP} entries; narrow it with path or glob]"


async def test_list_files_refusals(run: Run, project: Path):
    cases = {
        "elsewhere": "`elsewhere` is outside the workspace.",
        "..": "`..` is outside the workspace.",
        "/": "`/` is outside the workspace.",
        "nope": "`nope` does not exist.",
        "README.md": "`README.md` is a file, not a directory; read_file reads it.",
    }
    for path, says in cases.items():
        result = await run("list_files", path=path)
        assert (result.ok, result.text) == (False, says)
    empty = project / "empty"
    empty.mkdir()
    assert (await run("list_files", path="empty")).text == "(`empty` is empty.)"


async def test_a_fifo_is_refused_rather_than_read_for_ever(run: Run, workspace: Path):
    os.mkfifo(workspace / "pipe")
    for tool, arguments in [
        ("read_file", {"path": "pipe"}),
        ("write_file", {"path": "pipe", "content": "x"}),
        ("apply_patch", {"patch": "--- a/pipe\n+++ b/pipe\n@@ -1 +1 @@\n-a\n+b\n"}),
    ]:
        result = await run(tool, **arguments)
        assert (result.ok, result.text) == (
            False,
            "`pipe` is not a regular file (a FIFO, socket or device).",
        ), tool
    result = await run("grep", pattern="x", path="pipe")
    assert (result.ok, result.text) == (
        False,
        "`pipe` is not a regular file (a FIFO, socket or device).",
    )


async def test_read_file_pages_are_contiguous_even_after_a_line_too_big_to_fit(
    run: Run, workspace: Path
):
    (workspace / "mixed.txt").write_text("a\n" + ("w" * 3999 + "\n") * 17 + "b\nc\n")
    result = await run("read_file", path="mixed.txt")
    shown = result.text.splitlines()
    assert shown[0] == "a"
    assert shown[-1] == "[lines 1–17 of 20; read on with offset=18]"
    assert shown[1:-1] == ["w" * 3999] * 16
    result = await run("read_file", path="mixed.txt", offset=18)
    assert result.text == "w" * 3999 + "\nb\nc\n[lines 18–20 of 20]"


async def test_read_file_counts_a_last_line_without_newline(run: Run, workspace: Path):
    (workspace / "f.txt").write_text("a\nb")
    result = await run("read_file", path="f.txt", offset=2)
    assert result.text == "b\n[lines 2–2 of 2]"
