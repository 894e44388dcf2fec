"""Benchmark the tool-output compressor against Headroom, on the dev and held-out corpora.

    .venv/bin/python bench/compress.py [--corpus DIR] [--no-headroom] [--category NAME]

Every figure is measured in this run: nothing is hard-coded. For each sample
of a corpus (manifest.jsonl: id, category, path, command) it compresses the
output in-process, expands it back through a real RefStore, compresses it
again in two fresh processes to check determinism, counts salient tokens
still visible (see compress_metrics), and runs Headroom (headroom-ai, its
defaults, in its own venv under bench/.venv-headroom, installed on first use)
on the same samples for the side-by-side.

Speed is timed interleaved, so that the machine's load falls on both sides
alike: each sample is compressed by the engine, then by Headroom, three times
over, and each side's median of the three is its time. Headroom keeps a cache
of what it compressed, so each of its three timings is by its own worker
process, each seeing each sample once (as a single pass over the corpus does).

Two corpora, side by side: dev (shared/corpus/dev, what the engine was tuned
on) and held-out (bench/.holdout, made on this machine by bench/holdout.py,
never tuned on; made on first use). The aims must hold on both. An exception
inside the engine is a crash even when the engine sends the input back (its
fail-open contract): the bench counts every error the engine logs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from compress_metrics import error_lines, line_shape, salient, visible  # noqa: E402
from compress_report import Row, print_report, print_side_by_side  # noqa: E402

from plane.economy.compress import compress, expand  # noqa: E402
from plane.economy.compress.refs import RefStore  # noqa: E402

DEV_CORPUS = next(
    (p / "shared" / "corpus" / "dev" for p in ROOT.parents if (p / "shared" / "corpus").is_dir()),
    ROOT.parent / "shared" / "corpus" / "dev",
)
HOLDOUT_CORPUS = ROOT / "bench" / ".holdout"
HEADROOM_VENV = ROOT / "bench" / ".venv-headroom"
HEADROOM_VERSION = "headroom-ai==0.42.0"


@dataclass
class Sample:
    id: str
    category: str
    command: str
    text: str

    @property
    def kb(self) -> float:
        return len(self.text.encode("utf-8", "surrogateescape")) / 1024


@dataclass
class Outcome:
    text: str
    ms: float
    compressor: str = ""
    note: str = ""
    round_trip_ok: bool = True
    crashed: bool = False
    digest: str = ""
    extra: dict = field(default_factory=dict)


def load(corpus: Path, category: str | None) -> list[Sample]:
    samples = []
    with open(corpus / "manifest.jsonl", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            if category and row["category"] != category:
                continue
            raw = (corpus / row["path"]).read_bytes()
            text = raw.decode("utf-8", "surrogateescape")
            samples.append(Sample(row["id"], row["category"], row.get("command") or "", text))
    return samples


def digest(text: str, refs: dict[str, str]) -> str:
    h = hashlib.sha256(text.encode("utf-8", "surrogatepass"))
    for ref in sorted(refs):
        h.update(b"\0" + ref.encode() + b"\0" + refs[ref].encode("utf-8", "surrogatepass"))
    return h.hexdigest()


class _Errors(logging.Handler):
    """Counts the errors the engine logs (an exception it caught, a failed round trip)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


REPEATS = 3


def run_ours(
    samples: list[Sample], store: RefStore, headroom: Headroom | None = None
) -> dict[str, Outcome]:
    """The engine's outcome of each sample; with `headroom`, Headroom's timed between ours."""
    outcomes = {}
    errors = _Errors()
    engine_log = logging.getLogger("plane.economy.compress")
    engine_log.addHandler(errors)
    engine_log.propagate = False  # counted here, not printed over the table
    for s in samples:
        times = []
        result = None
        crashed = False
        errors.count = 0
        for n in range(REPEATS):
            start = time.perf_counter()
            try:
                result = compress(s.text, command=s.command or None)
            except Exception:
                crashed = True
            times.append((time.perf_counter() - start) * 1000)
            if headroom is not None:
                headroom.time(n, s)
            if crashed:
                break
        if headroom is not None:
            headroom.done(s)
        crashed = crashed or errors.count > 0
        if crashed or result is None:
            outcomes[s.id] = Outcome(s.text, 0.0, crashed=True, round_trip_ok=False)
            continue
        store.put(result.refs)
        try:
            # an output sent unchanged needs no expanding (and may hold marker-like text
            # of its own: a README that shows one)
            ok = result.text == s.text or expand(result.text, store.get) == s.text
        except Exception:
            ok = False
        outcomes[s.id] = Outcome(
            result.text,
            statistics.median(times),
            result.compressor,
            result.note,
            round_trip_ok=ok and result.note != "round trip failed",
            crashed=crashed or result.note.startswith("error"),
            digest=digest(result.text, result.refs),
        )
    return outcomes


def digests_in_fresh_process(corpus: Path, category: str | None) -> dict[str, str]:
    cmd = [sys.executable, str(Path(__file__)), "--corpus", str(corpus), "--digests"]
    if category:
        cmd += ["--category", category]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def print_digests(samples: list[Sample]) -> None:
    found = {}
    for s in samples:
        result = compress(s.text, command=s.command or None)
        found[s.id] = digest(result.text, result.refs)
    print(json.dumps(found))


def ensure_headroom() -> Path:
    python = HEADROOM_VENV / "bin" / "python"
    probe = [str(python), "-c", "import headroom"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print(f"installing {HEADROOM_VERSION} into {HEADROOM_VENV} …", file=sys.stderr)
    subprocess.run(["python3", "-m", "venv", str(HEADROOM_VENV)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q", HEADROOM_VERSION]
    subprocess.run(pip, check=True)
    return python


class Headroom:
    """Headroom's workers (`compress_headroom.py --timed`), one per timing: each compresses
    each sample once, so none answers from its cache."""

    def __init__(self) -> None:
        python = ensure_headroom()
        script = ROOT / "bench" / "compress_headroom.py"
        self.workers = [
            subprocess.Popen(
                [str(python), str(script), "--timed"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(REPEATS)
        ]
        self.outcomes: dict[str, Outcome] = {}
        self.times: list[float] = []
        self.text = ""

    def time(self, n: int, s: Sample) -> None:
        worker = self.workers[n]
        assert worker.stdin is not None and worker.stdout is not None
        worker.stdin.write(json.dumps({"command": s.command, "text": s.text}) + "\n")
        worker.stdin.flush()
        reply = json.loads(worker.stdout.readline())
        self.times.append(reply["ms"])
        self.text = self.text or reply["text"]

    def done(self, s: Sample) -> None:
        """Headroom's outcome of the sample just timed: its first output, its median time."""
        self.outcomes[s.id] = Outcome(self.text, statistics.median(self.times))
        self.times, self.text = [], ""

    def close(self) -> None:
        for worker in self.workers:
            if worker.stdin is not None:
                worker.stdin.close()
            worker.wait(timeout=60)


def measure(s: Sample, ours: Outcome, theirs: Outcome | None) -> Row:
    tokens = salient(s.text)
    row = Row(
        category=s.category,
        chars=len(s.text),
        kb=s.kb,
        out=len(ours.text),
        ms=ours.ms,
        tokens=len(tokens.all),
        seen=visible(tokens.all, ours.text),
        err_tokens=len(tokens.error_words),
        err_seen=visible(tokens.error_words, ours.text),
        unchanged=ours.text == s.text,
        larger=len(ours.text) > len(s.text),
        round_trip_failed=not ours.round_trip_ok,
        crashed=ours.crashed,
    )
    if s.category in ("compiler", "logs"):
        lines = error_lines(s.text)
        row.err_lines = len(lines)
        row.err_lines_seen = sum(1 for line in lines if line in ours.text)
        shapes = {line_shape(line) for line in ours.text.split("\n")}
        row.err_lines_repeated = sum(
            1 for line in lines if line not in ours.text and line_shape(line) in shapes
        )
    if theirs is not None:
        row.hr_out = len(theirs.text)
        row.hr_ms = theirs.ms
        row.hr_seen = visible(tokens.all, theirs.text)
        row.hr_err_seen = visible(tokens.error_words, theirs.text)
        row.hr_unchanged = theirs.text == s.text
    return row


def evaluate(corpus: Path, category: str | None, headroom: bool) -> list[Row]:
    samples = load(corpus, category)
    workers = Headroom() if headroom else None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = RefStore(Path(tmp) / "refs.db")
            ours = run_ours(samples, store, workers)
            store.close()
    finally:
        if workers is not None:
            workers.close()
    theirs = workers.outcomes if workers is not None else {}
    fresh = [digests_in_fresh_process(corpus, category) for _ in range(2)]
    rows = []
    for s in samples:
        row = measure(s, ours[s.id], theirs.get(s.id))
        digests = {ours[s.id].digest, fresh[0].get(s.id), fresh[1].get(s.id)}
        row.nondeterministic = len(digests) != 1
        row.id, row.compressor = s.id, ours[s.id].compressor
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="one corpus only (default: dev and held-out)")
    parser.add_argument("--category", help="only the samples of this category")
    parser.add_argument("--no-headroom", action="store_true", help="skip the side-by-side")
    parser.add_argument("--digests", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--detail", action="store_true", help="one line per sample too")
    args = parser.parse_args()
    if args.digests:
        print_digests(load(args.corpus, args.category))
        return
    if args.corpus:
        corpora = {args.corpus.name: args.corpus}
    else:
        if not (HOLDOUT_CORPUS / "manifest.jsonl").exists():
            print("making the held-out corpus (bench/holdout.py) …", file=sys.stderr)
            subprocess.run([sys.executable, str(ROOT / "bench" / "holdout.py")], check=True)
        corpora = {"dev": DEV_CORPUS, "held-out": HOLDOUT_CORPUS}
    results = {}
    for name, corpus in corpora.items():
        print(f"── {name}: {corpus}")
        rows = evaluate(corpus, args.category, headroom=not args.no_headroom)
        print_report(rows, headroom=not args.no_headroom, detail=args.detail)
        print()
        results[name] = rows
    if len(results) > 1:
        print_side_by_side(results, headroom=not args.no_headroom)


if __name__ == "__main__":
    main()
