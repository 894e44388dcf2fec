"""Where the fast tier's CPU goes: the run's CPU seconds (pytest's controller,
its workers and every process they reaped), then the tests' own by phase, by
file and by fixture (tests/support/cpu_spent.py records them).

    .venv/bin/python bench/suite_cpu.py                 # make test-fast's tier, 4 workers
    .venv/bin/python bench/suite_cpu.py --workers 3 tests/tui

CPU, not wall time: on a machine shared with other runs, wall time is mostly
waiting for a core. What the tests wait for otherwise (timers, sockets,
processes) is printed last: read it from a run with `--workers 0`. On 2
cores, the run's CPU halved is a floor under its wall time. A PostgreSQL
server started for the run (tests/support/postgres.py) is started by
`pg_ctl`, which leaves it to init: its CPU is not in the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAST = "not e2e and not embedded and not slow and not postgres_twin"


def children_cpu() -> float:
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return reaped.ru_utime + reaped.ru_stime


def run(workers: int, paths: list[str], directory: Path) -> tuple[float, float, int]:
    """The run's CPU seconds, its wall seconds and pytest's exit code."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "tests.support.cpu_spent", "-m", FAST]
    command += ["--hypothesis-profile", "fast", "--ignore=tests/e2e"]  # as make test-fast
    if workers:
        command += ["-n", str(workers), "--dist", "loadgroup"]
    env = dict(os.environ, PLANE_TEST_CPU_DIR=str(directory), PYTHONDONTWRITEBYTECODE="")
    before, started = children_cpu(), time.monotonic()
    done = subprocess.run(command + paths, cwd=ROOT, env=env, capture_output=True, text=True)
    print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:])
    return children_cpu() - before, time.monotonic() - started, done.returncode


def records(directory: Path) -> list[dict]:
    return [json.loads(line) for path in directory.glob("*.jsonl") for line in path.open()]


def report(cpu: float, wall: float, rows: list[dict], top: int) -> None:
    phases: Counter[str] = Counter()
    files: Counter[str] = Counter()
    tests_in_file: Counter[str] = Counter()
    fixtures: Counter[str] = Counter()
    users: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    waits: Counter[str] = Counter()
    for row in rows:
        phases[row["phase"]] += row["cpu"]
        if row["phase"] == "collection":
            continue
        file = row["test"].split("::")[0]
        files[file] += row["cpu"]
        tests[row["test"]] += row["cpu"]
        waits[row["test"]] += row["wall"] - row["cpu"]
        if row["phase"] == "call":
            tests_in_file[file] += 1
            for name in row["fixtures"]:
                users[name] += 1
        for name in row["fixtures"]:
            fixtures[name] += row["cpu"]
    measured = sum(phases.values())
    count = len(tests)
    print(f"run: {cpu:.1f} CPU-s in {wall:.0f} s wall; {count} tests")
    print(f"  in the tests' set-up, call and tear-down: {measured - phases['collection']:.1f}")
    print(f"  collection (every worker imports every test module): {phases['collection']:.1f}")
    elsewhere = cpu - measured
    print(f"  elsewhere (each process's start: pytest, plugins, conftest): {elsewhere:.1f}")
    print("by phase: " + ", ".join(f"{phase} {seconds:.1f}" for phase, seconds in phases.items()))
    print(f"\ntop {top} files (CPU-s, tests, ms a test):")
    for file, seconds in files.most_common(top):
        n = tests_in_file[file] or 1
        print(f"  {seconds:6.1f} {n:5d} {1000 * seconds / n:6.0f}  {file}")
    print(f"\ntop {top} fixtures (CPU-s of the tests using them; not those every test uses):")
    common = {name for name, n in users.items() if n >= 0.9 * count}
    shown = [(name, s) for name, s in fixtures.most_common() if name not in common][:top]
    for name, seconds in shown:
        n = users[name] or 1
        print(f"  {seconds:6.1f} {n:5d} {1000 * seconds / n:6.0f}  {name}")
    print(f"\ntop {top} tests (CPU-s):")
    for test, seconds in tests.most_common(top):
        print(f"  {seconds:6.2f}  {test}")
    # Waiting: a test's wall time less its CPU (a timer, a socket, a process
    # not reaped yet). With workers, waiting for a core is in it too: read
    # it from a run with --workers 0.
    print(f"\nthe tests' waiting (wall less CPU): {sum(waits.values()):.1f} s; top {top}:")
    for test, seconds in waits.most_common(top):
        print(f"  {seconds:6.2f}  {test}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4, help="pytest-xdist's -n (0: none)")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("paths", nargs="*", help="test paths (default: the whole tier)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        cpu, wall, code = run(args.workers, args.paths, Path(directory))
        report(cpu, wall, records(Path(directory)), args.top)
    sys.exit(code)


if __name__ == "__main__":
    main()
