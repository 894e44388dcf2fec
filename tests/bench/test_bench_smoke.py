"""Every script in bench/ runs, at a tiny size, so that none rots between the
rounds that run it for its figures (bench/cache.py once stopped importing and
nobody knew). Each runs as a user would run it, in a process of its own, and
must exit 0 having printed something; its figures are not checked here.

A script that needs the real embedded model, PostgreSQL or a few seconds of
measuring is in the slow tier (make test runs it; make test-fast does not).
The modules the scripts share (compress_metrics, compress_report,
bill_sessions, bill_agents) run inside them. compress_headroom.py runs
inside Headroom's own venv (bench/.venv-headroom, made by the first full
bench run): where there is none it is compiled, not run.
"""

from __future__ import annotations

import json
import os
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
HEADROOM = BENCH / ".venv-headroom" / "bin" / "python"
SHARED = {"compress_metrics.py", "compress_report.py", "bill_sessions.py", "bill_agents.py"}

SAMPLE_LOG = "\n".join(
    f"2026-11-29 12:00:{s % 60:02} INFO worker {s % 4} handled request {s} in {s % 17} ms"
    for s in range(400)
)
SAMPLE_LISTING = "\n".join(f"src/pkg{i % 9}/mod{i}.py" for i in range(300))


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A corpus of two outputs made here, in the corpus's layout."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    rows = [
        ("logs-1", "logs", "journalctl -n 400", SAMPLE_LOG),
        ("listings-1", "listings", "find src -name '*.py'", SAMPLE_LISTING),
    ]
    with open(folder / "manifest.jsonl", "w", encoding="utf-8") as manifest:
        for ident, category, command, text in rows:
            (folder / f"{ident}.txt").write_text(text, encoding="utf-8")
            row = {"id": ident, "category": category, "path": f"{ident}.txt", "command": command}
            manifest.write(json.dumps(row) + "\n")
    return folder


def _run(args: list[str], tmp_path: Path, timeout: float = 300) -> str:
    env = {**os.environ, "PLANE_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    assert done.returncode == 0, f"{args[0]} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert done.stdout.strip(), f"{args[0]} printed nothing"
    return done.stdout


QUICK = {
    "prices.py": [],
    "burn.py": ["--seeds", "2"],
    "compress_ceiling.py": ["--corpus", "{corpus}"],
}
SLOW = {
    "fleet.py": "--agents 200 --busy 20 --warmup 0.5 --repeat 1 --dir {tmp}".split(),
    "http_clients.py": ["--agents", "2", "--seconds", "0.1", "--warmup", "0"],
    "bill.py": ["--smoke", "--corpus", "{corpus}"],
    "compress.py": ["--no-headroom", "--corpus", "{corpus}"],
    "compress_cli.py": ["--smoke"],
    "holdout.py": ["--out", "{tmp}/holdout", "--only", "tables"],
    "ledger.py": "--agents 2 --seconds 0.1 --rounds 1 --calls 100 --dir {tmp}".split(),
    "metering.py": ["--agents", "2", "--seconds", "0.1", "--warmup", "0"],
    "gateway.py": "--clients 2 --rounds 1 --seconds 0.2 --warmup 0".split(),
    "gateway_memory.py": "--calls 40 --every 20 --setup ss".split(),
    "connections.py": ["--agents", "2", "--seconds", "0.1", "--warmup", "0"],
    "fanout.py": ["--agents", "2", "--subscribers", "2", "--seconds", "0.2"],
    "status.py": "--agents 5 --calls 1 --waiting 1 --repeat 1 --dir {tmp}".split(),
    "tui.py": ["--agents", "5", "--rate", "20", "--presses", "3"],
    "planes.py": ["--agents", "6", "--seconds", "0.3"],
    "takeover.py": ["--agents", "20", "--no-scans", "--renewals", "2"],
    "plane_start.py": ["--agents", "2", "--starts", "2"],
    "tui_start.py": ["--agents", "3", "--starts", "2", "--no-offline"],
    "cache.py": ["--smoke"],
    "guard.py": ["--turns", "6"],
    "metrics_scrapes.py": "--scrapers 2 --calls 2 --rounds 1 --ledger 100".split(),
    "suite_cpu.py": ["--workers", "0", "tests/test_error_tree.py"],
}


def _args(script: str, args: list[str], tmp_path: Path, corpus: Path) -> list[str]:
    names = {"corpus": str(corpus), "tmp": str(tmp_path)}
    return [str(BENCH / script), *(arg.format(**names) for arg in args)]


def test_every_script_is_covered() -> None:
    scripts = {path.name for path in BENCH.glob("*.py")}
    covered = set(QUICK) | set(SLOW) | SHARED | {"compress_headroom.py", "zero_server.py"}
    assert scripts == covered, "a bench script this smoke test does not run"


@pytest.mark.parametrize("script", sorted(QUICK))
def test_a_quick_script_runs(script: str, tmp_path: Path, corpus: Path) -> None:
    _run(_args(script, QUICK[script], tmp_path, corpus), tmp_path)


EMBEDDED = {"cache.py"}
"""Scripts that start the real embedded model: on the embedded tier's one worker,
given the time a loaded machine takes to load and run it (120 s was seen to
fall short with the machine's two cores shared)."""


@pytest.mark.slow
@pytest.mark.parametrize(
    "script",
    [
        pytest.param(
            name,
            marks=[pytest.mark.embedded, pytest.mark.timeout(280)] if name in EMBEDDED else [],
        )
        for name in sorted(SLOW)
    ],
)
def test_a_script_runs_at_a_tiny_size(script: str, tmp_path: Path, corpus: Path) -> None:
    _run(_args(script, SLOW[script], tmp_path, corpus), tmp_path)


def test_the_zero_server_answers() -> None:
    """zero_server.py prints its port and serves until it is stopped (metering.py runs it)."""
    server = subprocess.Popen(
        [sys.executable, str(BENCH / "zero_server.py")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        import httpx

        reply = httpx.get(f"http://127.0.0.1:{port}/stats", timeout=10)
        assert reply.status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_headroom_s_worker_compiles_and_runs_where_its_venv_is(tmp_path: Path) -> None:
    script = BENCH / "compress_headroom.py"
    py_compile.compile(str(script), cfile=str(tmp_path / "c.pyc"), doraise=True)
    if not HEADROOM.exists():
        return
    message = {"role": "user", "content": "hello"}
    request = {"session": "s", "messages": [message], "model": "gpt-4o", "frozen": 0}
    done = subprocess.run(
        [str(HEADROOM), str(script), "--proxy"],
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout)["messages"][0]["content"] == "hello"
