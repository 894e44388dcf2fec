"""How much any compressor could remove while every salient token stays visible.

    .venv/bin/python bench/compress_ceiling.py [--corpus DIR]

The removal aim (≥ 72%) and the visibility aims (salient tokens ≥ 90%, tokens
on error lines ≥ 99.5%) pull against each other on outputs where nearly every
line holds a location or an error word: `grep -rn error`, `find -printf %p`.
This prints, per category, two bounds computed from the bench's own yardstick
(compress_metrics), never from the engine:

- tokens: the text could shrink to its distinct salient tokens and nothing
  else (a `path:line` listed as `path:3,12,40`, and paths as `dir/{a.py,b.py}`,
  each directory once, as markers do). No line-based
  compressor gets near it; it is the bound only a rewrite of the text would.
- lines: kept lines stay verbatim, as this engine's do, so a token costs the
  shortest line that shows it (a greedy cover, shortest line first); `path:line`
  tokens, and paths, still cost only their place in a marker's list. Long one-line texts
  (JSON with documents in its strings) are cut inside lines by the engine, so
  for them this bound is too low and the tokens bound is the one to read.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from compress import DEV_CORPUS, HOLDOUT_CORPUS  # noqa: E402
from compress_metrics import ERROR_LINE, IDENTIFIER, salient  # noqa: E402

_AT_LINE = re.compile(r"^(.+):(\d+)$")


def floors(text: str) -> tuple[int, int]:
    """(tokens bound, lines bound): the fewest characters that show every salient token."""
    tokens = salient(text)
    listed: dict[str, list[str]] = defaultdict(list)
    under: dict[str, list[str]] = defaultdict(list)
    need = set(tokens.error_words)
    for path in tokens.paths:
        at = _AT_LINE.match(path)
        if at:
            listed[at.group(1)].append(at.group(2))
        else:
            slash = path.rfind("/")
            under[path[: slash + 1]].append(path[slash + 1 :])
    lists = sum(len(f) + 1 + sum(len(n) + 1 for n in ns) for f, ns in listed.items())
    lists += sum(len(d) + 2 + sum(len(n) + 1 for n in ns) for d, ns in under.items())
    by_tokens = lists + sum(len(t) + 1 for t in need)
    by_lines = lists
    covered: set[str] = set()
    for line in sorted(set(text.splitlines()), key=len):
        held = set(IDENTIFIER.findall(line)) if ERROR_LINE.search(line) else set()
        if (held & need) - covered:
            by_lines += len(line) + 1
            covered |= held
    return min(by_tokens, len(text)), min(by_lines, len(text))


def report(name: str, corpus: Path) -> None:
    sums: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    with open(corpus / "manifest.jsonl", encoding="utf-8") as f:
        for row in map(json.loads, filter(str.strip, f)):
            text = (corpus / row["path"]).read_bytes().decode("utf-8", "surrogateescape")
            by_tokens, by_lines = floors(text)
            total = sums[row["category"]]
            total[0] += len(text)
            total[1] += by_tokens
            total[2] += by_lines
    print(f"── {name}: {corpus}")
    print(f"{'category':14}{'chars':>9}  most removable: tokens   lines")
    overall = [0, 0, 0]
    for category, (chars, by_tokens, by_lines) in sorted(sums.items()):
        overall = [overall[0] + chars, overall[1] + by_tokens, overall[2] + by_lines]
        _row(category, chars, by_tokens, by_lines)
    _row("overall", *overall)


def _row(category: str, chars: int, by_tokens: int, by_lines: int) -> None:
    tokens, lines = _most(chars, by_tokens), _most(chars, by_lines)
    print(f"{category:14}{chars / 1000:8.0f}k  {tokens:>22} {lines:>7}")


def _most(chars: int, kept: int) -> str:
    return f"{100 * (1 - kept / chars):.1f}%" if chars else "—"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="one corpus only (default: dev and held-out)")
    args = parser.parse_args()
    corpora = (
        {"corpus": args.corpus} if args.corpus else {"dev": DEV_CORPUS, "held-out": HOLDOUT_CORPUS}
    )
    for name, corpus in corpora.items():
        if not (corpus / "manifest.jsonl").exists():
            sys.exit(f"no {corpus}/manifest.jsonl (the held-out corpus: python bench/holdout.py)")
        report(name, corpus)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
