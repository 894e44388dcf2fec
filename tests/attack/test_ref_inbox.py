"""The ref store's inbox under attack: cut short, garbled, killed while written, written at once.

`plane compress` posts what it removed to the inbox beside the ref store, unsynced, and the
store takes it in later (see `plane.economy.compress.inbox`). The promise: a ref printed is
retrievable after the command exits, from any process; a crash (a killed command, a power cut
that leaves a file cut short or full of garbage) never damages the store and never makes a
ref give back text other than what it stands for.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from plane.economy.compress import inbox
from plane.economy.compress.markers import ref_for
from plane.economy.compress.refs import RefStore, UnknownRef

ROOT = Path(__file__).resolve().parents[2]
CHUNKS = {ref_for(text): text for text in ("alpha\n" * 3, "béta \udcff", "", "gamma" * 40)}


def _posted_bytes(tmp_path: Path) -> bytes:
    box = tmp_path / "model.inbox"
    inbox.post(box, CHUNKS)
    (path,) = box.iterdir()
    return path.read_bytes()


def test_a_post_cut_short_anywhere_gives_whole_entries_or_none(tmp_path: Path) -> None:
    data = _posted_bytes(tmp_path)
    cut = tmp_path / "cut"
    for end in range(len(data) + 1):
        cut.write_bytes(data[:end])
        for ref, content, _ in inbox.entries(cut):
            assert CHUNKS[ref].encode("utf-8", "surrogatepass") == content


def test_a_garbled_post_never_gives_wrong_text(tmp_path: Path) -> None:
    data = _posted_bytes(tmp_path)
    rng = random.Random(29)
    garbled = tmp_path / "garbled"
    for _ in range(2000):
        spoiled = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            spoiled[rng.randrange(len(spoiled))] = rng.randrange(256)
        garbled.write_bytes(bytes(spoiled))
        for ref, content, _ in inbox.entries(garbled):
            assert CHUNKS[ref].encode("utf-8", "surrogatepass") == content


def test_the_store_opens_over_any_garbage_and_takes_in_only_whole_entries(
    tmp_path: Path,
) -> None:
    path = tmp_path / "refs.db"
    box = inbox.of(path)
    inbox.post(box, {ref_for("kept"): "kept"})
    whole = _posted_bytes(tmp_path)
    (box / "cut").write_bytes(whole[: len(whole) // 2])
    (box / "noise").write_bytes(os.urandom(4096))
    (box / "empty").write_bytes(b"")
    (box / "lies").write_bytes(b"plane refs 1\nk_AAAAAAAAAA 1.0 999999999\nshort\n")
    (box / "negative").write_bytes(b"plane refs 1\nk_AAAAAAAAAA 1.0 -5\n\n")
    (box / "not finite").write_bytes(b"plane refs 1\n" + _entry("nan", "x") + _entry("inf", "y"))
    (box / "a directory").mkdir()
    with RefStore(path) as store:
        assert store.get(ref_for("kept")) == "kept"
        for ref in ("k_AAAAAAAAAA", ref_for("x"), ref_for("y")):
            try:
                store.get(ref)
            except UnknownRef:
                continue
            raise AssertionError(f"{ref} came out of garbage")
    assert [p.name for p in box.iterdir()] == ["a directory"]  # not ours: left alone


def _entry(at: str, content: str) -> bytes:
    return f"{ref_for(content)} {at} {len(content)}\n{content}\n".encode()


WRITER = """
import sys, time
from pathlib import Path
from plane.economy.compress import inbox
box = Path(sys.argv[1])
n = 0
while True:
    inbox.post(box, {f"k_{n:010d}": "x" * 3_000_000})  # a bad ref: never taken in
    n += 1
    print(n, flush=True)
"""


def test_a_command_killed_while_posting_leaves_nothing_half_read(tmp_path: Path) -> None:
    path = tmp_path / "refs.db"
    box = inbox.of(path)
    inbox.post(box, {ref_for("before"): "before"})
    for seed in range(5):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(box)], cwd=ROOT, stdout=subprocess.PIPE
        )
        assert writer.stdout is not None
        writer.stdout.readline()  # it has posted once and is writing again
        time.sleep(random.Random(seed).uniform(0, 0.01))
        _wait_for_a_draft(box)
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stdout.close()
    drafts = [p for p in box.iterdir() if p.name.startswith(".")]
    assert drafts  # killed while writing
    with RefStore(path) as store:
        assert store.get(ref_for("before")) == "before"
    assert [p for p in box.iterdir()] == drafts  # a draft is never read; the rest went in
    old = time.time() - 7200
    for draft in drafts:
        os.utime(draft, (old, old))
    with RefStore(path):
        pass
    assert not list(box.iterdir())  # drafts older than the ttl are cleared


def _wait_for_a_draft(box: Path) -> None:
    deadline = time.monotonic() + 10
    while not any(p.name.startswith(".") for p in box.iterdir()):
        assert time.monotonic() < deadline, "the writer never wrote"


def test_commands_posting_at_once_while_the_store_takes_in(tmp_path: Path) -> None:
    env = {**os.environ, "PLANE_HOME": str(tmp_path)}
    lines = [f"{n:05d} INFO worker {n % 7} handled request {n * 31 % 997}\n" for n in range(400)]
    inputs = ["".join(lines[k:] + lines[:k]).encode() for k in range(0, 400, 50)]
    taker = subprocess.Popen(
        [sys.executable, "-c", _TAKER, str(tmp_path / "refs.db")], cwd=ROOT, env=env
    )
    posters = [
        subprocess.Popen(
            [sys.executable, "-m", "plane.entry", "compress"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        for _ in inputs
    ]
    outputs = [p.communicate(data)[0] for p, data in zip(posters, inputs, strict=True)]
    taker.terminate()
    taker.wait()
    assert all(p.returncode == 0 for p in posters)
    for data, out in zip(inputs, outputs, strict=True):
        assert re.search(rb"ref:k_", out)
        back = subprocess.run(
            [sys.executable, "-m", "plane.entry", "expand"],
            input=out,
            capture_output=True,
            cwd=ROOT,
            env=env,
            check=False,
        )
        assert back.returncode == 0 and back.stdout == data, back.stderr


_TAKER = """
import sys
from pathlib import Path
from plane.economy.compress.refs import RefStore
while True:
    with RefStore(Path(sys.argv[1])) as store:
        store.take_in()
"""
