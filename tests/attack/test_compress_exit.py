"""`plane compress` ends its process without tearing the interpreter down: what it printed
must still reach the reader whole, a reader that goes away must still get the quiet exit
of a Unix tool, and a failure must still say one line and exit non-zero.

Each runs the console script's own entry point in a process of its own, as a shell does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from plane.economy.compress import compress
from plane.entry import EXIT_BROKEN_PIPE

ROOT = Path(__file__).resolve().parents[2]
LOG = "".join(
    f"2026-11-29 12:00:{n % 60:02} INFO worker {n % 7} handled request {n * 31 % 997}\n"
    for n in range(4000)
)


def _shell(*args: str) -> list[str]:
    return [sys.executable, "-m", "plane.entry", *args]


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "PLANE_HOME": str(home)}


def test_a_large_output_reaches_the_reader_whole(tmp_path: Path) -> None:
    text = LOG  # ~215 KB in, the JSON out larger than a pipe's buffer
    done = subprocess.run(
        _shell("compress", "--json"),
        input=text.encode(),
        capture_output=True,
        env=_env(tmp_path),
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) > 65536
    printed = json.loads(done.stdout)
    expected = compress(text)
    assert printed["text"] == expected.text and printed["refs"] == expected.refs


def test_a_reader_that_goes_away_gets_the_quiet_exit(tmp_path: Path) -> None:
    # ~18 KB printed, more than stdout's buffer: the pipe breaks in the command's own
    # write, not in the flush at its end.
    lines = [f"{n:06d} {'x' * (n % 50)} /src/m{n}.py: unique line {n * 7919}" for n in range(2000)]
    process = subprocess.Popen(
        _shell("compress"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
        cwd=ROOT,
    )
    assert process.stdin and process.stdout and process.stderr
    process.stdout.close()  # the reader is gone before a byte is written (`| head -c0`)
    process.stdin.write("\n".join(lines).encode())
    process.stdin.close()
    code = process.wait(timeout=60)
    error = process.stderr.read()
    assert code == EXIT_BROKEN_PIPE and b"Traceback" not in error, error


def test_a_store_it_cannot_write_says_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "refs.inbox").write_text("a file where the inbox goes")
    done = subprocess.run(
        _shell("compress"),
        input=LOG.encode(),
        capture_output=True,
        env=_env(home),
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr.startswith(b"plane: could not keep the removed text")
    assert done.stderr.count(b"\n") == 1
