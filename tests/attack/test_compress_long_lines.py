"""Compression over one long line a command can print in a moment.

`printf '\\t%.0s' {1..262144}`, a row of colons, a carriage return repeated: a few
of the compressor's patterns backtracked over such a line in time that grew with
its square (64 KB of tabs under `make`: 36 s), in a thread that holds the
interpreter, so the whole plane stood still meanwhile. Each now reads it once;
under the suite's timeout, the old patterns would still be at it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from plane.economy.compress import compress
from tests.support.command import plane_process

SIZE = 256 * 1024


@pytest.mark.parametrize(
    ("unit", "command"),
    [("\t", "make"), (" \t", "make"), ("\x85", "make"), (":", "pytest"), ("\r", "cat log")],
)
def test_one_long_line_is_read_in_one_pass(unit: str, command: str) -> None:
    text = unit * (SIZE // len(unit))
    assert compress(text, command=command).text == text  # nothing in one line to fold


def test_json_nested_deeper_than_python_reads_goes_through_unchanged_and_quietly(
    tmp_path: Path,
) -> None:
    """`plane compress` in a pipe: the nesting is the input's, not a fault to report."""
    deep = "[" * 5000 + "]" * 5000 + "\n"
    done = plane_process(tmp_path / "home", "compress", "--command", "cat deep.json", stdin=deep)
    assert (done.returncode, done.stdout, done.stderr) == (0, deep, "")
