"""What one `plane compress` call costs from a shell, against the aim of 60 ms.

    .venv/bin/python bench/compress_cli.py [--runs 15] [--smoke]

Runs the installed console script (`.venv/bin/plane`, which points at
plane.entry:main) on two inputs made here: a 4 KB log (this machine's own
`python -m pip list -v` and a `python -X importtime` trace of the command
itself) and a 20 KB Python file (the start of the standard library's
argparse.py). Each is piped into a fresh process RUNS times; the minimum is
the figure (the machine's load only ever adds), with the least CPU time
(user + system) beside it, which a busy machine disturbs less. `python -c pass` runs in the
same loop as the floor. At 100 KB (the same log and file, repeated) the
yardstick is a Python `cat` (`sys.stdout.buffer.write(sys.stdin.buffer.read())`)
on the same bytes, the two taking turns in one loop: the aim is at most 2× its time,
so that compression's time grows no faster than reading the input does. The
ref store is a scratch PLANE_HOME; bytecode is cached (in a scratch
PYTHONPYCACHEPREFIX, warmed by one run first) as an installed package's is,
even where PYTHONDONTWRITEBYTECODE is set.

Beside the Python file, Python's own parser alone (`compile(text, ..., PyCF_ONLY_AST)`
in a process that does nothing else) on the same bytes: the floor of any compressor that
parses the file, against the same cat (this one reads Python's statements with a line
scanner, and parses a file only where the scanner is not sure of it).

`--instructions` also counts, under valgrind (callgrind), the instructions each
100 KB call executes: a count the machine's load does not move, for comparing
code where the times are noisy.

`--against REV` also times the plane package as it was at a git revision
against this tree, both run with `python -S -P` (no site, so no editable-install
finder, and no current directory on the path, either of which would load this
tree in both when run from the repo) from an extracted copy of each, in one
interleaved loop: the two figures share the machine's load, so their
difference is the code's.

`--python PATH` runs everything with another environment's Python and its
`plane` script beside it: a user's install (`python -m venv /tmp/u && /tmp/u/bin/pip
install .`, not editable), whose start-up loads nothing for an editable install's
finder (that finder loads `pathlib` and `re` before `plane` starts, in the cat too).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLANE = ROOT / ".venv" / "bin" / "plane"
PYTHON = ROOT / ".venv" / "bin" / "python"
AIM_MS = 60.0
CAT_AIM = 2.0
CAT = "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"
PARSE = "import sys; compile(sys.stdin.buffer.read().decode(), '<unknown>', 'exec', 1024)"


def log_4k() -> bytes:
    """A real log: pip's verbose listing and Python's import trace, cut to 4 KB at a line."""
    pip = subprocess.run(
        [str(PYTHON), "-m", "pip", "list", "-v", "--disable-pip-version-check"],
        capture_output=True,
        check=False,
    ).stdout
    trace = subprocess.run(
        [str(PYTHON), "-X", "importtime", "-c", "import plane.economy.compress.engine"],
        capture_output=True,
        check=False,
    ).stderr
    text = trace + pip
    return text[: text.rfind(b"\n", 0, 4096) + 1]


def python_20k() -> bytes:
    source = Path(argparse.__file__).read_bytes()
    return source[: source.rfind(b"\n", 0, 20480) + 1]


def repeated(data: bytes, size: int = 100 * 1024) -> bytes:
    """`data` again and again, cut at a line to `size` bytes."""
    out = data
    while len(out) < size:
        out += data
    return out[: out.rfind(b"\n", 0, size) + 1]


def best_ms(cmd: list[str], stdin: bytes, runs: int, env: dict[str, str]) -> tuple[float, float]:
    """The least wall time and the least CPU time (user + system) of `runs` calls, in ms."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(cmd, input=stdin, capture_output=True, env=env, check=False)
        walls.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        cpus.append(cpu * 1000)
        if done.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed: {done.stderr.decode(errors='replace')}")
    return min(walls), min(cpus)


def interleaved(
    calls: dict[str, list[str]], stdin: bytes, runs: int, env: dict[str, str]
) -> dict[str, tuple[float, float]]:
    """`best_ms` of each call, the calls taking turns in one loop: a minute of heavier load
    then falls on all of them, not on the one whose loop it was (the ratios are the figure)."""
    best = {name: (1e9, 1e9) for name in calls}
    for _ in range(runs):
        for name, cmd in calls.items():
            ms, cpu = best_ms(cmd, stdin, 1, env)
            best[name] = (min(best[name][0], ms), min(best[name][1], cpu))
    return best


def instructions(cmd: list[str], stdin: bytes, env: dict[str, str]) -> int:
    """The instructions one call executes, counted by valgrind's callgrind."""
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={scratch}/out", *cmd],
            input=stdin,
            capture_output=True,
            env=env,
            check=False,
        )
    found = re.search(rb"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        sys.exit(f"valgrind failed on {' '.join(cmd)}: {done.stderr.decode(errors='replace')}")
    return int(found.group(1))


def against(rev: str, inputs: dict[str, bytes], runs: int, env: dict[str, str]) -> None:
    """This tree's plane package and the one at `rev`, under `python -S -P`, interleaved."""
    with tempfile.TemporaryDirectory() as scratch:
        trees = {}
        for name, source in ((rev, rev), ("this tree", None)):
            tree = Path(scratch) / ("rev" if source else "tree")
            tree.mkdir()
            if source is None:
                archive = subprocess.run(
                    ["git", "-C", str(ROOT), "ls-files", "-z", "plane"],
                    capture_output=True,
                    check=True,
                ).stdout
                subprocess.run(
                    ["tar", "-C", str(ROOT), "--null", "-T", "-", "-cf", str(tree / "t.tar")],
                    input=archive,
                    check=True,
                )
            else:
                subprocess.run(
                    ["git", "-C", str(ROOT), "archive", "-o", str(tree / "t.tar"), source, "plane"],
                    check=True,
                )
            subprocess.run(["tar", "-C", str(tree), "-xf", str(tree / "t.tar")], check=True)
            trees[name] = tree
        code = "import sys; from plane.entry import main; sys.exit(main(['compress']))"
        jobs = {}
        for name, tree in trees.items():
            for label, data in inputs.items():
                cmd = [str(PYTHON), "-S", "-P", "-c", code]
                jobs[(name, label)] = (cmd, data, {**env, "PYTHONPATH": str(tree)})
        best = {key: (1e9, 1e9) for key in jobs}
        for _ in range(runs + 1):  # the first round warms each copy's bytecode
            for key, (cmd, data, job_env) in jobs.items():
                ms, cpu = best_ms(cmd, data, 1, job_env)
                best[key] = (min(best[key][0], ms), min(best[key][1], cpu))
        floor, _ = best_ms([str(PYTHON), "-S", "-P", "-c", "pass"], b"", runs, env)
        print(
            f"with python -S -P (python -S -P -c pass: {floor:.1f} ms), min of {runs}, interleaved:"
        )
        for (name, label), (ms, cpu) in best.items():
            print(f"  {name:>12}, {label}: {ms:.1f} ms a call, {cpu:.1f} ms CPU")


def main() -> int:
    global PLANE, PYTHON  # the one environment every measure runs in
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--against", metavar="REV", help="also time the plane as it was at REV")
    parser.add_argument("--smoke", action="store_true", help="one run of each, for CI")
    parser.add_argument(
        "--instructions", action="store_true", help="also count instructions (needs valgrind)"
    )
    parser.add_argument(
        "--python",
        type=Path,
        metavar="PATH",
        help="another environment's python (its plane beside it): a user's install",
    )
    args = parser.parse_args()
    if args.python is not None:
        PYTHON = args.python.absolute()
        PLANE = PYTHON.parent / "plane"
    if args.smoke:
        args.runs = 1
    if args.instructions and shutil.which("valgrind") is None:
        sys.exit("--instructions needs valgrind (apt-get install valgrind)")
    if not PLANE.exists():
        sys.exit(f"no {PLANE}: run `make .venv/bin/plane` first (or install plane there)")
    inputs = {"4 KB log": log_4k(), "20 KB Python file": python_20k()}
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "PLANE_HOME": home, "PYTHONPYCACHEPREFIX": f"{home}/pycache"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        best_ms([str(PLANE), "compress"], inputs["20 KB Python file"], 1, env)  # warm the cache
        floor, floor_cpu = best_ms([str(PYTHON), "-c", "pass"], b"", args.runs, env)
        print(f"python -c pass: {floor:.1f} ms, {floor_cpu:.1f} ms CPU (min of {args.runs})")
        for name, data in inputs.items():
            ms, cpu = best_ms([str(PLANE), "compress"], data, args.runs, env)
            print(
                f"plane compress, {name} ({len(data):,} bytes): {ms:.1f} ms a call"
                f" (min of {args.runs}), {ms / AIM_MS:.2f}× the {AIM_MS:.0f} ms aim,"
                f" {ms - floor:.1f} ms over python -c pass; {cpu:.1f} ms CPU"
            )
        for name, data in (("log", inputs["4 KB log"]), ("Python file", python_20k())):
            big = repeated(data)
            calls = {"cat": [str(PYTHON), "-c", CAT], "plane": [str(PLANE), "compress"]}
            if name == "Python file":
                calls["parse"] = [str(PYTHON), "-c", PARSE]
            best = interleaved(calls, big, args.runs, env)
            (cat, cat_cpu), (ms, cpu) = best["cat"], best["plane"]
            ratio = ms / cat
            mark = "✓" if ratio <= CAT_AIM else "✗"
            print(
                f"  {mark} plane compress, 100 KB {name} ({len(big):,} bytes): {ms:.1f} ms a call,"
                f" a Python cat {cat:.1f} ms: {ratio:.2f}× (aim ≤ {CAT_AIM:.0f}×);"
                f" CPU {cpu:.1f} against {cat_cpu:.1f} ms, {cpu / cat_cpu:.2f}×"
            )
            if name == "Python file":
                parse, parse_cpu = best["parse"]
                print(
                    f"    Python's parser alone on it: {parse:.1f} ms, {parse / cat:.2f}× the cat;"
                    f" CPU {parse_cpu:.1f} ms, {parse_cpu / cat_cpu:.2f}×"
                )
            if args.instructions:
                counts = {
                    "a Python cat": instructions([str(PYTHON), "-c", CAT], big, env),
                    "plane compress": instructions([str(PLANE), "compress"], big, env),
                }
                if name == "Python file":
                    counts["the parser alone"] = instructions([str(PYTHON), "-c", PARSE], big, env)
                said = ", ".join(f"{who} {n / 1e6:.1f} M" for who, n in counts.items())
                print(f"    instructions (valgrind): {said}")
        if args.against:
            against(args.against, inputs, args.runs, env)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
