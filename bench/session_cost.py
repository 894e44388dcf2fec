"""What compression does to the bill: agent sessions replayed through the plane, priced.

    .venv/bin/python bench/session_cost.py [--corpus dev|held-out|both] [--sessions N]
                                           [--no-headroom]

A session is one agent working through a run of tool calls whose outputs are
corpus samples (five to a session, in a fixed order): each turn, the model
asks for `run_command` (`cat` of the sample, the command that printed it
named after a no-op `:` so the compressor gets the same hint it gets in
bench/compress.py), then answers in a word. The model is the scripted one of
the tests (tests/support/scripted_llm.py), a real HTTP server on the
loopback; everything between is the plane's own: its turn loop, tools,
compression, prompt layout, provider wire formats, ledger and pricing
(genai-prices: claude-sonnet-4-5 over the Anthropic Messages wire, gpt-5 over
OpenAI Chat Completions).

The scripted server reports each call's usage the way each API counts it,
worked out from the request it received (tokens: ceil(characters / 4)):

- gpt-5 (OpenAI): automatic prefix caching, for prompts of 1,024 tokens and
  more, in steps of 128 tokens: the cached part is the longest prefix this
  request shares with an earlier one of its session.
- claude-sonnet-4-5 (Anthropic): explicit breakpoints (`cache_control`, which
  the plane sets on its system prompt and latest messages): a prefix up to a
  breakpoint that an earlier request wrote is read at a tenth of the price;
  the rest up to the last breakpoint is written at 1.25×; at least 1,024
  tokens are needed to cache anything.

Three ways, same sessions: compression off, on (the plane's default), and
Headroom (headroom-ai's defaults, in bench/.venv-headroom) applied to each
request's messages as its proxy would, with the plane's compression off; the
bill is what the provider would charge for the messages Headroom sends. The
cache check runs every session twice with compression on and compares the
requests byte for byte (the run_command frame's wall time, `· 0.01s]`, is
the one thing that may differ, and is masked).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from compress import DEV_CORPUS, HOLDOUT_CORPUS, ensure_headroom  # noqa: E402

import tests.support.scripted_llm as scripted  # noqa: E402
from plane.wire.protocol import Usage  # noqa: E402
from tests.support.fixtures_plane import NOON, launch  # noqa: E402
from tests.support.scripted_llm import ScriptedLLM  # noqa: E402

PER_SESSION = 5
MIN_CACHE = 1024
OPENAI_STEP = 128
KEY_ENV = "PLANE_BENCH_SCRIPTED_KEY"
APIS = {
    "claude-sonnet-4-5": "anthropic",
    "gpt-5": "openai-compatible",
}
CONFIG = """
defaults:
  provider: scripted
  model: {model}
  max_calls_per_turn: 4
providers:
  scripted:
    kind: {kind}
    base_url: {base_url}
    api_key_env: {key_env}
    models: [{model}]
    max_retries: 0
compression:
  enabled: {compression}
sandbox: false
agents:
{agents}
"""
_WALL_TIME = re.compile(r" · \d+\.\d+s\]")


def tokens(chars: int) -> int:
    return math.ceil(chars / 4)


# ── the provider's side: what a request costs ───────────────────────────────


class Headroom:
    """A Headroom worker in its own venv: messages in, compressed messages out."""

    def __init__(self) -> None:
        python = ensure_headroom()
        script = ROOT / "bench" / "compress_headroom.py"
        self.process = subprocess.Popen(
            [str(python), str(script), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def compress(self, messages: list[dict[str, Any]], model: str) -> list[dict[str, Any]]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"messages": messages, "model": model}) + "\n")
        self.process.stdin.flush()
        found: list[dict[str, Any]] = json.loads(self.process.stdout.readline())["messages"]
        return found

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


@dataclass
class Cache:
    """One session's prompt cache at the provider, and every request it was sent."""

    api: str
    headroom: Headroom | None = None
    model: str = ""
    seen: list[str] = field(default_factory=list)
    written: set[str] = field(default_factory=set)
    requests: list[str] = field(default_factory=list)

    def usage(self, body: dict[str, Any], text: str, tool_calls: tuple[Any, ...]) -> Usage:
        if self.headroom is not None:
            body = {**body, "messages": self.headroom.compress(body["messages"], self.model)}
        out = len(text) + sum(len(name) + len(json.dumps(args)) for name, args in tool_calls)
        if self.api == "anthropic":
            usage = self._anthropic(body)
        else:
            usage = self._openai(body)
        self.requests.append(json.dumps(body, sort_keys=True, ensure_ascii=False))
        return usage.model_copy(update={"output_tokens": tokens(out)})

    def _openai(self, body: dict[str, Any]) -> Usage:
        prompt = json.dumps([body.get("tools"), body["messages"]], sort_keys=True)
        shared = max((_common(prompt, earlier) for earlier in self.seen), default=0)
        self.seen.append(prompt)
        total, cached = tokens(len(prompt)), tokens(shared)
        if total < MIN_CACHE or cached < MIN_CACHE:
            cached = 0
        else:
            cached = MIN_CACHE + (cached - MIN_CACHE) // OPENAI_STEP * OPENAI_STEP
        return Usage(input_tokens=total, cache_read_tokens=min(cached, total))

    def _anthropic(self, body: dict[str, Any]) -> Usage:
        """Blocks in Anthropic's cache order (tools, system, messages). Each breakpoint
        writes the prefix that ends there; a request reads the longest prefix an earlier
        one wrote that ends at one of its own block boundaries up to its last breakpoint
        (Anthropic looks back from each breakpoint), and writes the rest up to it."""
        pieces, marks = _anthropic_pieces(body)
        text = "".join(pieces)
        bounds = [sum(len(p) for p in pieces[: i + 1]) for i in range(len(pieces))]
        last = bounds[marks[-1]] if marks else 0
        read = 0
        for end in bounds:
            if end > last:
                break
            if _digest(text[:end]) in self.written:
                read = end
        for i in marks:
            if tokens(bounds[i]) >= MIN_CACHE:
                self.written.add(_digest(text[: bounds[i]]))
        write = last - read if tokens(last) >= MIN_CACHE else 0
        total = tokens(len(text))
        return Usage(
            input_tokens=total,
            cache_read_tokens=tokens(read),
            cache_write_tokens=min(tokens(write), total - tokens(read)),
        )


def _anthropic_pieces(body: dict[str, Any]) -> tuple[list[str], list[int]]:
    pieces: list[str] = [json.dumps(body.get("tools"), sort_keys=True)]
    marks: list[int] = []
    system = body.get("system") or []
    blocks = [*([{"text": system}] if isinstance(system, str) else system)]
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            blocks.append({"text": content, "role": message.get("role")})
        else:
            blocks.extend(content or [])
    for block in blocks:
        clean = {k: v for k, v in block.items() if k != "cache_control"}
        pieces.append(json.dumps(clean, sort_keys=True))
        if "cache_control" in block:
            marks.append(len(pieces) - 1)
    return pieces, marks


def _common(a: str, b: str) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:  # the longest common prefix, by bisection on slices (fast in C)
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@contextlib.contextmanager
def priced_by(cache_of: dict[str, Cache]) -> Iterator[None]:
    """The scripted server's usage, worked out by the session's cache (the one seam)."""
    original = scripted.derived_usage

    def usage(body: dict[str, Any], text: str, tool_calls: tuple[Any, ...] = ()) -> Usage:
        return cache_of["current"].usage(body, text, tool_calls)

    scripted.derived_usage = usage
    try:
        yield
    finally:
        scripted.derived_usage = original


# ── the plane's side: sessions through the real turn loop ───────────────────


@dataclass(frozen=True)
class Step:
    file: str  # the name it has in the agent's workspace
    source: Path  # the corpus sample
    command: str  # the command that printed it


@dataclass
class Bill:
    input_tokens: int = 0
    cached_tokens: int = 0
    cost: Decimal = Decimal(0)


def sessions_of(corpus: Path, limit: int | None) -> list[list[Step]]:
    """The corpus's samples in a fixed shuffled order (by their ids' hashes), five a session."""
    with open(corpus / "manifest.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    rows.sort(key=lambda row: hashlib.sha256(row["id"].encode()).hexdigest())
    steps = [Step(f"{r['id']}.out", corpus / r["path"], r.get("command") or "") for r in rows]
    runs = [steps[i : i + PER_SESSION] for i in range(0, len(steps), PER_SESSION)]
    return runs[:limit]


async def replay(
    sessions: list[list[Step]],
    model: str,
    mode: str,
    headroom: Headroom | None,
    root: Path,
) -> tuple[Bill, list[list[str]]]:
    """Run every session on one plane (an agent each); the bill and each session's requests."""
    api = "anthropic" if APIS[model] == "anthropic" else "openai"
    agents = "\n".join(f"  s{n}: {{}}" for n in range(len(sessions)))
    cache_of: dict[str, Cache] = {}
    with ScriptedLLM() as llm, priced_by(cache_of):
        base_url = llm.anthropic_url if api == "anthropic" else llm.base_url
        config = CONFIG.format(
            model=model,
            kind=APIS[model],
            base_url=base_url,
            key_env=KEY_ENV,
            compression="true" if mode == "on" else "false",
            agents=agents,
        )
        plane = await launch(root, llm, config)
        requests = []
        try:
            for n, steps in enumerate(sessions):
                agent = f"s{n}"
                workspace = plane.services.roster.get(agent).workspace
                for step in steps:
                    (workspace / step.file).write_bytes(step.source.read_bytes())
                cache_of["current"] = Cache(api, headroom if mode == "headroom" else None, model)
                for k, step in enumerate(steps):
                    command = f"cat {step.file}; : {shlex.quote(step.command)}"
                    llm.reply("", tool_calls=[("run_command", {"command": command})])
                    llm.reply("Noted.")
                    await plane.turn(agent, f"Step {k + 1}: run the next command.", within=120)
                requests.append(cache_of["current"].requests)
            bill = Bill()
            for entry in await plane.services.ledger.entries(NOON.date()):
                bill.input_tokens += entry.usage.input_tokens
                bill.cached_tokens += entry.usage.cache_read_tokens
                bill.cost += entry.cost_usd
        finally:
            await plane.stop()
    return bill, requests


async def run(corpora: dict[str, Path], limit: int | None, with_headroom: bool) -> None:
    os.environ[KEY_ENV] = "scripted"
    headroom = Headroom() if with_headroom else None
    modes = ["off", "on", *(["headroom"] if with_headroom else [])]
    try:
        for name, corpus in corpora.items():
            sessions = sessions_of(corpus, limit)
            steps = sum(len(s) for s in sessions)
            print(f"── {name}: {len(sessions)} sessions, {steps} tool calls, {2 * steps} LLM calls")
            print(f"{'model':<19} {'compression':<12} {'input tok':>11} {'cached':>7} {'bill':>10}")
            for model in APIS:
                bills = {}
                for mode in modes:
                    with tempfile.TemporaryDirectory() as tmp:
                        bill, _ = await replay(sessions, model, mode, headroom, Path(tmp))
                    bills[mode] = bill
                    share = bill.cached_tokens / bill.input_tokens if bill.input_tokens else 0
                    change = ""
                    if mode != "off" and bills["off"].cost:
                        change = f" {100 * (bill.cost / bills['off'].cost - 1):+6.1f}%"
                    print(
                        f"{model:<19} {mode:<12} {bill.input_tokens:>11,} {100 * share:6.1f}%"
                        f" ${bill.cost:>9.4f}{change}"
                    )
            await _cache_check(sessions)
            print()
    finally:
        if headroom is not None:
            headroom.close()


async def _cache_check(sessions: list[list[Step]]) -> None:
    """The same sessions twice, compression on: every request byte-identical."""
    runs = []
    for _ in range(2):
        with tempfile.TemporaryDirectory() as tmp:
            _, requests = await replay(sessions, "gpt-5", "on", None, Path(tmp))
        runs.append([[_WALL_TIME.sub(" · Ts]", r) for r in session] for session in requests])
    total = sum(len(s) for s in runs[0])
    same = sum(a == b for s, t in zip(*runs, strict=True) for a, b in zip(s, t, strict=True))
    mark = "✓" if same == total else "✗"
    print(f"  {mark} cache check: {same}/{total} requests byte-identical in a second run")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=["dev", "held-out", "both"], default="both")
    parser.add_argument("--sessions", type=int, help="at most this many sessions per corpus")
    parser.add_argument("--no-headroom", action="store_true")
    args = parser.parse_args()
    corpora = {"dev": DEV_CORPUS, "held-out": HOLDOUT_CORPUS}
    if args.corpus != "both":
        corpora = {args.corpus: corpora[args.corpus]}
    asyncio.run(run(corpora, args.sessions, not args.no_headroom))


if __name__ == "__main__":
    main()
