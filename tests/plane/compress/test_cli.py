"""`plane compress | expand | retrieve` as a person runs them, without a plane,
under PLANE_HOME: what each says and its exit code in this process
(tests/support/command.py), and each once as its own process, the real entry
point, which is also where what a call loads is seen."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import plane as plane_package
from plane.economy.compress.markers import expand, ref_for
from plane.economy.compress.refs import RefStore
from plane.home import Home, refs_db
from tests.plane.compress.helpers import HERE
from tests.support.command import Ran, plane_cli, plane_process


def plane(home: Path, *args: str, stdin: str | bytes = b"") -> Ran:
    """`plane ARGS` in this process."""
    return plane_cli(home, *args, stdin=stdin)


@pytest.fixture(scope="module")
def compressed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, bytes]:
    home = tmp_path_factory.mktemp("home")
    original = (HERE / "make.txt").read_bytes() + b"\xff\xfe not UTF-8 at all\n"
    done = plane(home, "compress", "--command", "make", stdin=original)
    assert done.returncode == 0, done.stderr
    return home, original, done.stdout_bytes


def test_compress_then_expand_gives_the_bytes_back(compressed: tuple[Path, bytes, bytes]) -> None:
    home, original, text = compressed
    assert len(text) < len(original) and b"ref:k_" in text
    back = plane(home, "expand", stdin=text)
    assert back.returncode == 0 and back.stdout_bytes == original


def test_json_has_refs_and_stats(compressed: tuple[Path, bytes, bytes]) -> None:
    home, original, _ = compressed
    done = plane(home, "compress", "--json", "--command", "make", stdin=original)
    report = json.loads(done.stdout)
    assert report["stats"]["compressor"] == "build"
    assert report["stats"]["chars_out"] < report["stats"]["chars_in"]
    assert set(report["refs"]) == set(re.findall(r"k_[\w-]{10}", report["text"]))


def test_retrieve_modes(compressed: tuple[Path, bytes, bytes]) -> None:
    home, _, text = compressed
    found = re.search(rb"k_[\w-]{10}", text)
    assert found is not None, text
    ref = found.group(0).decode()
    whole = plane(home, "retrieve", ref)
    assert whole.returncode == 0 and whole.stdout.strip()
    first = plane(home, "retrieve", ref, "--lines", "1:1")
    assert first.stdout == whole.stdout.split("\n")[0] + "\n"
    grep = plane(home, "retrieve", ref, "--grep", ".")
    assert grep.stdout.startswith("1:")


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
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("plane: ")


def test_expand_with_an_unknown_ref_fails_cleanly(tmp_path: Path) -> None:
    done = plane(tmp_path, "expand", stdin=b"[\xe2\x80\xa6 3 lines omitted ref:k_AAAAAAAAAA]\n")
    assert done.returncode == 1 and done.stdout == "" and "Unknown or expired ref" in done.stderr


def test_two_modes_at_once_is_a_usage_error(tmp_path: Path) -> None:
    done = plane(tmp_path, "retrieve", "k_AAAAAAAAAA", "--lines", "1:2", "--grep", "x")
    assert done.returncode == 2 and done.stdout == ""


@pytest.mark.parametrize("command", ["compress", "expand", "retrieve"])
def test_help(tmp_path: Path, command: str) -> None:
    done = plane(tmp_path, command, "--help")
    assert done.returncode == 0 and "usage:" in done.stdout


def test_a_crowded_inbox_is_taken_into_the_store_by_the_command_that_posts(
    tmp_path: Path,
) -> None:
    from plane.economy.compress import inbox

    box = tmp_path / "refs.inbox"
    for n in range(inbox.CROWDED - 1):
        inbox.post(box, {ref_for(f"chunk {n}"): f"chunk {n}"})
    original = (HERE / "make.txt").read_bytes()
    done = plane(tmp_path, "compress", "--command", "make", stdin=original)
    assert done.returncode == 0 and not list(box.iterdir())
    with RefStore(tmp_path / "refs.db") as store:
        assert store.get(ref_for("chunk 0")) == "chunk 0"
        assert expand(done.stdout, store.get).encode() == original


def test_plane_compress_forms_agree_and_a_mistake_is_still_a_usage_error(tmp_path: Path) -> None:
    original = (HERE / "make.txt").read_bytes()
    spaced = plane(tmp_path, "compress", "--command", "make", stdin=original)
    joined = plane(tmp_path, "compress", "--command=make", stdin=original)
    assert spaced.returncode == joined.returncode == 0
    assert spaced.stdout == joined.stdout and len(spaced.stdout_bytes) < len(original)
    as_json = plane(tmp_path, "compress", "--json", "--command", "make", stdin=original)
    assert json.loads(as_json.stdout)["text"] == spaced.stdout
    assert plane(tmp_path, "expand", stdin=spaced.stdout_bytes).stdout_bytes == original
    wrong = plane(tmp_path, "compress", "--bogus", stdin=original)
    assert wrong.returncode == 2 and not wrong.stdout
    assert wrong.stderr == "plane compress: no option '--bogus' (see `plane compress --help`).\n"


def test_a_short_output_leaves_no_ref_store_behind(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = plane(home, "compress", stdin=b"hello\n")
    assert done.returncode == 0 and done.stdout == "hello\n"
    assert not (home / "refs.db").exists()


def loaded(ran: subprocess.CompletedProcess[str]) -> set[str]:
    """The modules a process run with PYTHONPROFILEIMPORTTIME loaded, from its stderr."""
    return {line.split("|")[-1].strip() for line in ran.stderr.splitlines() if "|" in line}


def test_plane_compress_as_a_shell_runs_it_loads_only_what_compresses_its_input(
    tmp_path: Path,
) -> None:
    """The real entry point in its own process: the one place what a call
    loads can be seen (the Python compressor; no argparse, no SQLite: its
    refs go to the store's inbox; no compressor for brace languages)."""
    source = (HERE / "textwrap_py.txt").read_text()
    done = plane_process(
        tmp_path,
        "compress",
        "--command",
        "cat textwrap.py",
        stdin=source,
        env={"PYTHONPROFILEIMPORTTIME": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert "ref:k_" in done.stdout
    modules = loaded(done)
    assert "plane.economy.compress.engine" in modules  # it did the work
    assert "plane.economy.compress.formats.source_python" in modules
    assert "plane.economy.compress.formats.source_braces" not in modules
    heavy = {"argparse", "dataclasses", "inspect", "hashlib", "json", "platformdirs", "secrets"}
    assert not heavy & modules
    assert "threading" not in modules
    assert "sqlite3" not in modules  # the refs went to the store's inbox
    assert list((tmp_path / "refs.inbox").iterdir())


@pytest.mark.parametrize(
    ("fixture", "command", "compressor"),
    [
        ("textwrap_py.txt", "cat textwrap.py", "source_python"),
        ("make.txt", "make", "diagnostics"),  # a build log
    ],
)
def test_plane_compress_loads_no_typing_nor_modules_only_the_store_or_the_plane_use(
    tmp_path: Path, fixture: str, command: str, compressor: str
) -> None:
    """typing was most of what a call on a 100 KB file spent importing (its named tuples
    and TYPE_CHECKING); math and fcntl serve only the store's reader and the plane's lock;
    pathlib (the home's and the inbox's paths, ~2 ms of a call), importlib and contextlib
    serve the plane. Checked as a shell runs the command, so no later import brings them
    back unseen: as the console script runs it (`python -m` loads importlib and contextlib
    itself), and without `site` (an editable install's finder loads pathlib at start-up,
    and would hide it; a user's install has none)."""
    script = "import sys; from plane.entry import main; sys.exit(main())"  # bin/plane's
    done = subprocess.run(
        [sys.executable, "-S", "-c", script, "compress", "--command", command],
        env={
            **os.environ,
            "PLANE_HOME": str(tmp_path),
            "PYTHONPATH": str(Path(plane_package.__file__).parents[1]),
            "PYTHONPROFILEIMPORTTIME": "1",
        },
        input=(HERE / fixture).read_text(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    modules = loaded(done)
    assert f"plane.economy.compress.formats.{compressor}" in modules  # it did the work
    assert "plane.home" in modules and "plane.economy.compress.inbox" in modules  # refs kept
    assert list((tmp_path / "refs.inbox").iterdir())
    unwanted = {"typing", "math", "fcntl", "pathlib", "importlib", "contextlib"} & modules
    assert not unwanted, f"plane compress loads {sorted(unwanted)}"


def test_refs_printed_by_one_process_are_retrieved_and_expanded_by_others(
    tmp_path: Path,
) -> None:
    """`plane retrieve` and `plane expand` as a shell runs them, each in its
    own process: what they read was kept by another (compressed here)."""
    original = (HERE / "make.txt").read_text()
    done = plane(tmp_path, "compress", "--command", "make", stdin=original)
    ref = re.findall(r"k_[\w-]{10}", done.stdout)[0]
    got = plane_process(tmp_path, "retrieve", ref, "--lines", "1:1")
    assert got.returncode == 0, got.stderr
    assert got.stdout == plane(tmp_path, "retrieve", ref).stdout.split("\n")[0] + "\n"
    back = plane_process(tmp_path, "expand", stdin=done.stdout)
    assert back.returncode == 0, back.stderr
    assert back.stdout == original


def _loose_home(root: Path) -> Path:
    """A home made by hand: loose modes, the token and a WAL file there, a link named as
    the log, a directory named as the lock, and a file of the user's own."""
    root.mkdir(mode=0o755, parents=True)
    root.chmod(0o755)
    for name in ("plane.db", "plane.db-wal", "refs.db", "token", "notes.txt"):
        (root / name).write_text(name)
        (root / name).chmod(0o644)
    (root / "plane.log").symlink_to(root / "notes.txt")
    (root / "plane.lock").mkdir()
    return root


def _tree(root: Path) -> dict[str, tuple[str, int]]:
    """Each entry of the home: its kind and mode (a link's own, not followed)."""
    kinds = {True: "link", False: "file"}
    return {
        path.name: (
            "dir" if path.is_dir() and not path.is_symlink() else kinds[path.is_symlink()],
            stat.S_IMODE(path.lstat().st_mode),
        )
        for path in [root, *root.iterdir()]
        if path.name != "refs.inbox"
    }


def test_plane_compress_makes_the_home_private_as_the_plane_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`plane compress` finds its store without pathlib (`plane.home.refs_db`): the home it
    leaves is the one `Home.ensure` leaves, from a loose one made by hand, and its store is
    where the plane's is, PLANE_HOME given through a link and with `~`."""
    by_plane = Home(_loose_home(tmp_path / "a" / "home")).ensure()
    _loose_home(tmp_path / "b" / "home")
    (tmp_path / "link").symlink_to(tmp_path / "b")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PLANE_HOME", "~/link/home")
    assert refs_db() == str(Home.from_env().refs_db) == str(tmp_path / "b" / "home" / "refs.db")
    done = plane_process(
        Path("~/link/home"),
        "compress",
        stdin=(HERE / "make.txt").read_text(),
        env={"HOME": str(tmp_path)},
    )
    assert done.returncode == 0 and "ref:k_" in done.stdout, done.stderr
    assert _tree(tmp_path / "b" / "home") == _tree(by_plane.root)
    assert stat.S_IMODE((tmp_path / "b" / "home" / "plane.lock").stat().st_mode) != 0o600
    assert list((tmp_path / "b" / "home" / "refs.inbox").iterdir())


class HoursAgo:
    """A clock for the plane's store, set some hours before now."""

    def __init__(self, hours: float) -> None:
        self.moment = datetime.now(UTC) - timedelta(hours=hours)

    def now(self) -> datetime:
        return self.moment

    async def sleep_until(self, when: datetime) -> None:  # pragma: no cover - unused here
        raise NotImplementedError


def test_the_shell_keeps_refs_as_long_as_the_plane_is_set_to(tmp_path: Path) -> None:
    """With `compression: {ttl_seconds: 86400}` a ref shown two hours ago is
    the user's to retrieve, and still the agent's after the user did."""
    day = 86_400
    with RefStore(Home(tmp_path).refs_db, ttl_seconds=day, clock=HoursAgo(2)) as store:
        store.put({ref_for("shown two hours ago"): "shown two hours ago"})
    done = plane(tmp_path, "retrieve", ref_for("shown two hours ago"))
    assert (done.returncode, done.stdout) == (0, "shown two hours ago\n"), done.stderr
    with RefStore(Home(tmp_path).refs_db, ttl_seconds=day) as plane_store:
        assert plane_store.get(ref_for("shown two hours ago")) == "shown two hours ago"
