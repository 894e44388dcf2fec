"""grep: a real search in a child process, confined, capped, killable."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from plane.tools import sandbox, search

from .conftest import Run


@pytest.fixture
def project(workspace: Path, tmp_path: Path) -> Path:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("import os\n\ndef main():\n    return TODO\n")
    (workspace / "src" / "notes.md").write_text("todo: write docs\nTODO later\n")
    (workspace / "README.md").write_text("A TODO list\n")
    (workspace / "blob.bin").write_bytes(b"TODO\x00\x01\x02")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("TODO in git\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TODO secret\n")
    (workspace / "linked_dir").symlink_to(outside)
    (workspace / "linked_file").symlink_to(outside / "secret.txt")
    (workspace / "alias.md").symlink_to("README.md")
    return workspace


async def test_grep_finds_lines_as_path_line_text_in_order(run: Run, project: Path):
    result = await run("grep", pattern="TODO")
    assert result.ok
    assert result.text.splitlines() == [
        "README.md:1:A TODO list",
        "src/app.py:4:    return TODO",
        "src/notes.md:2:TODO later",
    ]


async def test_grep_follows_no_symlink_it_meets_but_searches_one_it_is_given(
    run: Run, project: Path
):
    result = await run("grep", pattern="TODO", path="alias.md")
    assert (result.ok, result.text) == (True, "README.md:1:A TODO list")  # where it leads


@pytest.mark.skipif(sandbox.abi() == 0, reason="this kernel has no Landlock")
async def test_grep_runs_in_the_sandbox_when_commands_do(run: Run, project: Path, ctx):
    ctx.sandboxed = True
    result = await run("grep", pattern="TODO", path="src")
    assert (result.ok, result.text) == (
        True,
        "src/app.py:4:    return TODO\nsrc/notes.md:2:TODO later",
    )


async def test_grep_options(run: Run, project: Path):
    result = await run("grep", pattern="todo", ignore_case=True, glob="*.md", path="src")
    assert result.text.splitlines() == [
        "src/notes.md:1:todo: write docs",
        "src/notes.md:2:TODO later",
    ]
    result = await run("grep", pattern=r"^def \w+\(", path="src/app.py")
    assert result.text == "src/app.py:3:def main():"


async def test_grep_with_no_match_says_so(run: Run, project: Path):
    result = await run("grep", pattern="nothing-like-this", path="src")
    assert (result.ok, result.text) == (True, "(No match for `nothing-like-this` in `src`.)")


async def test_grep_caps_matches_and_long_lines(run: Run, workspace: Path):
    (workspace / "big.txt").write_text(("x" * 1000 + "\n") * (search.MAX_MATCHES + 50))
    lines = (await run("grep", pattern="x")).text.splitlines()
    assert len(lines) == search.MAX_MATCHES + 1
    assert lines[0] == "big.txt:1:" + "x" * search.MAX_LINE + "…"
    assert lines[-1].startswith(f"[… stopped at {search.MAX_MATCHES} matches")


async def test_grep_refusals(run: Run, project: Path):
    cases = {
        ("(unclosed", "."): "`pattern` is not a valid regular expression: missing ), "
        "unterminated subpattern at position 0.",
        ("x", "../outside"): "`../outside` is outside the workspace.",
        ("x", "linked_dir"): "`linked_dir` is outside the workspace.",
        ("x", "nope"): "`nope` does not exist.",
    }
    for (pattern, path), says in cases.items():
        result = await run("grep", pattern=pattern, path=path)
        assert (result.ok, result.text) == (False, says)


async def test_a_runaway_regex_is_stopped_and_its_process_killed(
    run: Run, workspace: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(search, "GREP_TIMEOUT_S", 1)
    (workspace / "evil.txt").write_text("a" * 40 + "!\n")
    started = time.monotonic()
    result = await run("grep", pattern=r"^(a+)+$")
    assert time.monotonic() - started < 30  # the regex alone would run for hours
    assert (result.ok, result.text) == (
        False,
        "grep was stopped after 1s; narrow the path or glob, or simplify the pattern.",
    )
    assert _running_with(str(workspace)) == []


def _running_with(text: str) -> list[int]:
    """Live (non-zombie) processes whose command line mentions `text`."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append(int(proc.name))
    return found
