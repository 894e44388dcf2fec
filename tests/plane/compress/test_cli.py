"""`plane compress | expand | retrieve` as a person runs them, without a plane, under PLANE_HOME."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from plane.economy.compress.markers import expand, ref_for
from plane.economy.compress.refs import RefStore
from tests.plane.compress.helpers import HERE

ROOT = Path(__file__).resolve().parents[3]


def plane(home: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PLANE_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "plane.economy.compress.cli", *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=ROOT,
        check=False,
    )


@pytest.fixture(scope="module")
def compressed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, bytes]:
    home = tmp_path_factory.mktemp("home")
    original = (HERE / "make.txt").read_bytes() + b"\xff\xfe not UTF-8 at all\n"
    done = plane(home, "compress", "--command", "make", stdin=original)
    assert done.returncode == 0, done.stderr
    return home, original, done.stdout


def test_compress_then_expand_gives_the_bytes_back(compressed: tuple[Path, bytes, bytes]) -> None:
    home, original, text = compressed
    assert len(text) < len(original) and b"ref:k_" in text
    back = plane(home, "expand", stdin=text)
    assert back.returncode == 0 and back.stdout == original


def test_json_has_refs_and_stats(compressed: tuple[Path, bytes, bytes]) -> None:
    home, original, _ = compressed
    done = plane(home, "compress", "--json", "--command", "make", stdin=original)
    report = json.loads(done.stdout)
    assert report["stats"]["compressor"] == "build"
    assert report["stats"]["chars_out"] < report["stats"]["chars_in"]
    assert set(report["refs"]) == set(re.findall(r"k_[\w-]{10}", report["text"]))


def test_retrieve_modes(compressed: tuple[Path, bytes, bytes]) -> None:
    home, _, text = compressed
    ref = re.search(rb"k_[\w-]{10}", text).group(0).decode()
    whole = plane(home, "retrieve", ref)
    assert whole.returncode == 0 and whole.stdout.strip()
    first = plane(home, "retrieve", ref, "--lines", "1:1")
    assert first.stdout == whole.stdout.split(b"\n")[0] + b"\n"
    grep = plane(home, "retrieve", ref, "--grep", ".")
    assert grep.stdout.startswith(b"1:")


def test_retrieve_takes_the_ref_as_the_marker_shows_it(
    compressed: tuple[Path, bytes, bytes],
) -> None:
    home, _, text = compressed
    marker = re.search(rb"\[[^\[\]\n]*ref:(k_[\w-]{10})\]", text)
    assert marker is not None
    whole = plane(home, "retrieve", marker.group(1).decode()).stdout
    for given in (b"ref:" + marker.group(1), marker.group(0)):
        done = plane(home, "retrieve", given.decode())
        assert done.returncode == 0, done.stderr
        assert done.stdout == whole


@pytest.mark.parametrize(
    "args",
    [("retrieve", "k_AAAAAAAAAA"), ("retrieve", "k_AAAAAAAAAA", "--lines", "zz")],
)
def test_errors_are_one_line_and_nothing_on_stdout(
    compressed: tuple[Path, bytes, bytes], args: tuple[str, ...]
) -> None:
    home, _, _ = compressed
    done = plane(home, *args)
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr.count(b"\n") == 1 and done.stderr.startswith(b"plane: ")


def test_expand_with_an_unknown_ref_fails_cleanly(tmp_path: Path) -> None:
    done = plane(tmp_path, "expand", stdin=b"[\xe2\x80\xa6 3 lines omitted ref:k_AAAAAAAAAA]\n")
    assert done.returncode == 1 and done.stdout == b"" and b"Unknown or expired ref" in done.stderr


def test_two_modes_at_once_is_a_usage_error(tmp_path: Path) -> None:
    done = plane(tmp_path, "retrieve", "k_AAAAAAAAAA", "--lines", "1:2", "--grep", "x")
    assert done.returncode == 2 and done.stdout == b""


@pytest.mark.parametrize("command", ["compress", "expand", "retrieve"])
def test_help(tmp_path: Path, command: str) -> None:
    done = plane(tmp_path, command, "--help")
    assert done.returncode == 0 and b"usage:" in done.stdout


def entry(
    home: Path, *args: str, stdin: bytes = b"", importtime: bool = False
) -> subprocess.CompletedProcess[bytes]:
    """The `plane` console script's own entry point (plane.entry), as a shell runs it."""
    env = {**os.environ, "PLANE_HOME": str(home)}
    flags = ["-X", "importtime"] if importtime else []
    return subprocess.run(
        [sys.executable, *flags, "-m", "plane.entry", *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=ROOT,
        check=False,
    )


def test_plane_compress_starts_without_argparse_dataclasses_hashlib_json_or_platformdirs(
    tmp_path: Path,
) -> None:
    done = entry(
        tmp_path,
        "compress",
        "--command",
        "make",
        stdin=(HERE / "make.txt").read_bytes(),
        importtime=True,
    )
    assert done.returncode == 0, done.stderr
    loaded = {
        line.split("|")[-1].strip() for line in done.stderr.decode().splitlines() if "|" in line
    }
    assert "plane.economy.compress.engine" in loaded  # it did the work
    heavy = {"argparse", "dataclasses", "inspect", "hashlib", "json", "platformdirs", "secrets"}
    assert not heavy & loaded
    assert "threading" not in loaded
    assert "sqlite3" not in loaded  # the refs went to the store's inbox
    assert list((tmp_path / "refs.inbox").iterdir())


def test_refs_printed_by_one_process_are_retrieved_by_another(tmp_path: Path) -> None:
    original = (HERE / "make.txt").read_bytes()
    done = entry(tmp_path, "compress", "--command", "make", stdin=original)
    refs = set(re.findall(rb"k_[\w-]{10}", done.stdout))
    assert done.returncode == 0 and refs
    for ref in refs:
        got = entry(tmp_path, "retrieve", ref.decode())
        assert got.returncode == 0 and got.stdout.strip(), got.stderr
    assert entry(tmp_path, "expand", stdin=done.stdout).stdout == original


def test_a_crowded_inbox_is_taken_into_the_store_by_the_command_that_posts(
    tmp_path: Path,
) -> None:
    from plane.economy.compress import inbox

    box = tmp_path / "refs.inbox"
    for n in range(inbox.CROWDED - 1):
        inbox.post(box, {ref_for(f"chunk {n}"): f"chunk {n}"})
    original = (HERE / "make.txt").read_bytes()
    done = entry(tmp_path, "compress", "--command", "make", stdin=original)
    assert done.returncode == 0 and not list(box.iterdir())
    with RefStore(tmp_path / "refs.db") as store:
        assert store.get(ref_for("chunk 0")) == "chunk 0"
        assert expand(done.stdout.decode(), store.get).encode() == original


def test_compressing_python_loads_no_brace_language_compressor(tmp_path: Path) -> None:
    source = (HERE / "textwrap_py.txt").read_bytes()
    done = entry(
        tmp_path, "compress", "--command", "cat textwrap.py", stdin=source, importtime=True
    )
    assert done.returncode == 0, done.stderr
    loaded = {
        line.split("|")[-1].strip() for line in done.stderr.decode().splitlines() if "|" in line
    }
    assert "plane.economy.compress.formats.source_python" in loaded
    assert "plane.economy.compress.formats.source_braces" not in loaded


@pytest.mark.slow
def test_plane_compress_forms_agree_and_a_mistake_is_still_a_usage_error(tmp_path: Path) -> None:
    original = (HERE / "make.txt").read_bytes()
    spaced = entry(tmp_path, "compress", "--command", "make", stdin=original)
    joined = entry(tmp_path, "compress", "--command=make", stdin=original)
    assert spaced.returncode == joined.returncode == 0
    assert spaced.stdout == joined.stdout and len(spaced.stdout) < len(original)
    as_json = entry(tmp_path, "compress", "--json", "--command", "make", stdin=original)
    assert json.loads(as_json.stdout)["text"].encode() == spaced.stdout
    assert entry(tmp_path, "expand", stdin=spaced.stdout).stdout == original
    wrong = entry(tmp_path, "compress", "--bogus", stdin=original)
    assert wrong.returncode == 2 and not wrong.stdout
    assert wrong.stderr == b"plane: unrecognized arguments: --bogus (see `plane --help`).\n"


def test_a_short_output_leaves_no_ref_store_behind(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = entry(home, "compress", stdin=b"hello\n")
    assert done.returncode == 0 and done.stdout == b"hello\n"
    assert not (home / "refs.db").exists()
