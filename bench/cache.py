"""What plane's prompt layout is worth, in the provider's own cache counts.

Starts the real embedded model (SmolLM2-135M under llama.cpp's server; RAM
cache off and one slot, so each request is measured against the one before
it; each layout starts cold) and talks to it through plane's
`OpenAIProvider`, as an agent would (json_schema tool mode, the `read_file`
tool). A 10-turn conversation, its system prompt of ~1,000 tokens carrying a
real `## Repo Map` layer built by `plane.economy.repomap.map` from this
repository's own files, is run in four ways:

  a  plane's layout: `system_prompt(...)`, stable prefix, the date in the tail
  b  naive: a timestamp (HH:MM:SS.mmm, new every turn) opening the system prompt
  c0 plane's layout, each turn bringing a synthetic tool result, no compaction
  c  the same with history compaction (`plane.economy.compaction`, small thresholds)

and prints, per turn and in total, `cached_tokens / prompt_tokens` as the
server reported them (and prompt tokens, for c0 and c). Nothing is assumed.

The run's time is its uncached prompt tokens (~25,000, half of them (b)'s,
printed per layout) over the prompt speed of one thread: on two cores shared
with other work it can be many minutes; (b) is the price of the naive layout.

    .venv/bin/python bench/cache.py
    .venv/bin/python bench/cache.py --turns 4 --max-output 8
    .venv/bin/python bench/cache.py --smoke  # seconds: every step once, its figures meaningless
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx

from plane.agents.prompt import system_prompt
from plane.agents.roster import AgentSpec
from plane.config import EMBEDDED_MODEL, RepoMapConfig, SessionConfig
from plane.economy.compaction import compact
from plane.economy.repomap import map as repomap
from plane.providers import json_tools
from plane.providers.base import ChatMessage, CompletionRequest, ToolCall
from plane.providers.local import EmbeddedModel
from plane.providers.openai import OpenAIProvider
from plane.tools.registry import specs

REPO = Path(__file__).resolve().parent.parent
TOOLS = specs(["read_file"])
ROLE = """You review changes to plane, a self-hosted control plane for always-on LLM agents.
plane is an asyncio daemon (the `plane/` package) with a Textual terminal UI (`tui/`).
It meters every LLM call against a per-agent daily ceiling in US dollars, resets
spend at 00:00 UTC by its own clock, and writes each call to the ledger before
anything is shown about it.
When you review:
- Read the files a change touches before you judge it; the repo map below says
  what each file you have read before is for.
- Money is never swallowed: a failure to record spend must raise.
- Time is injected through a clock object; `datetime.now()` in logic is a defect.
- The TUI decides nothing; it shows what the plane says.
- Prefer the smallest change that is correct, and say why in one sentence.
Answer in short paragraphs. Quote file paths exactly as the repo map shows them."""
QUESTIONS = [
    "Which file holds the ledger?",
    "Where is the spending ceiling checked before a turn?",
    "How does the plane learn that the UTC day changed?",
    "What does the TUI show for an agent over its ceiling?",
    "Where are tool outputs compressed?",
    "Which module builds the system prompt?",
    "How are old tool results compacted?",
    "Where is the embedded model started?",
    "What does /limit off do?",
    "Summarise what you know about the runtime.",
]
COMPACTION = SessionConfig(
    compact_enabled=True,
    compact_keep_last_n_turns=2,
    compact_min_chars=400,
    compact_trigger_chars=1500,
)


@dataclass
class Run:
    """One layout's conversation, as the server counted it."""

    name: str
    prompt: list[int] = field(default_factory=list)
    cached: list[int] = field(default_factory=list)
    compacted: set[int] = field(default_factory=set)
    seconds: float = 0.0

    def share(self, turn: int) -> str:
        return _share(self.cached[turn], self.prompt[turn])

    def total(self) -> str:
        return _share(sum(self.cached), sum(self.prompt))


def _share(cached: int, prompt: int) -> str:
    return f"{cached:,}/{prompt:,} ({cached / prompt:.0%})" if prompt else "—"


def build_map(workspace: Path, files: int | None) -> str:
    """A real repo map: every plane module 'read' (or the first `files`),
    newest last, then the layer."""
    settings = RepoMapConfig(enabled=True)
    for path in sorted((REPO / "plane").rglob("*.py"))[:files]:
        rel = path.relative_to(REPO).as_posix()
        repomap.note_read(workspace, rel, path.read_text(errors="replace"), settings)
    return repomap.layer(workspace, settings)


def tool_result(turn: int, cases: int = 10) -> str:
    """A synthetic test log (~650 characters with 10 cases), different every turn."""
    lines = [f"===== test session {turn} starts: {cases} items ====="]
    lines += [
        f"tests/plane/test_area_{turn}.py::test_case_{i:02} PASSED [{(i + 1) * 10:3}%]"
        for i in range(cases)
    ]
    lines.append(f"===== {cases} passed in {turn + 1}.{turn * 7 % 10}0s =====")
    return "\n".join(lines)


def naive(system: str) -> Callable[[int], str]:
    """The layout plane avoids: what changes every turn comes first."""

    def build(_turn: int) -> str:
        stamp = datetime.now(UTC).strftime("%H:%M:%S.%f")[:-3]
        return f"Current time: {stamp} UTC.\n\n{system}"

    return build


async def converse(
    provider: OpenAIProvider,
    run: Run,
    system_for: Callable[[int], str],
    args: argparse.Namespace,
    *,
    tool_results: bool = False,
    compaction: SessionConfig | None = None,
) -> Run:
    """`args.turns` turns: a question (and a tool result), one call, the answer kept."""
    history: list[ChatMessage] = []
    started = time.monotonic()
    for turn in range(args.turns):
        done = compact(history, compaction) if compaction else None
        if done is not None:
            history = done.history
            run.compacted.add(turn)
        history.append(ChatMessage("user", QUESTIONS[turn % len(QUESTIONS)]))
        if tool_results:
            call = ToolCall(f"call_{turn}", "read_file", json.dumps({"path": f"log_{turn}.txt"}))
            history.append(ChatMessage("assistant", "", (call,)))
            result = tool_result(turn, args.cases)
            history.append(ChatMessage("tool", result, tool_call_id=call.id))
        completion = await provider.complete(_request(system_for(turn), history, args))
        history.append(ChatMessage("assistant", completion.text))
        run.prompt.append(completion.usage.input_tokens)
        run.cached.append(completion.usage.cache_read_tokens)
    run.seconds = time.monotonic() - started
    return run


def _request(
    system: str, history: list[ChatMessage], args: argparse.Namespace
) -> CompletionRequest:
    return CompletionRequest(
        model=EMBEDDED_MODEL,
        system=system,
        messages=tuple(history),
        tools=TOOLS,
        tool_mode="json_schema",
        max_output_tokens=args.max_output,
        stream=False,
    )


async def flush(provider: OpenAIProvider) -> None:
    """Start each layout cold. The one slot still holds the last prompt (and
    this server build does not erase slots): a tiny unrelated one replaces it."""
    request = CompletionRequest(
        model=EMBEDDED_MODEL,
        system="x",
        messages=(ChatMessage("user", "x"),),
        max_output_tokens=1,
        stream=False,
    )
    await provider.complete(request)


async def count_tokens(model: EmbeddedModel, text: str) -> int:
    root = (model.base_url or "").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {model.api_key}"}
    async with httpx.AsyncClient(timeout=30, headers=headers) as client:
        reply = await client.post(f"{root}/tokenize", json={"content": text})
        reply.raise_for_status()
        return len(reply.json()["tokens"])


async def measure(args: argparse.Namespace) -> None:
    model = EmbeddedModel(cache_ram_mib=0, n_parallel=1, threads=1, n_ctx=8192)
    started = time.monotonic()
    await model.start()
    provider = OpenAIProvider("embedded", base_url=model.base_url or "", api_key=model.api_key)
    try:
        with tempfile.TemporaryDirectory() as workspace:
            layer = build_map(Path(workspace), args.map_files)
            spec = AgentSpec(
                "reviewer", EMBEDDED_MODEL, "embedded", args.role, None, Path(workspace), None
            )
        system = system_prompt(spec, datetime.now(UTC).date(), (layer,))
        plan = [
            ("a", lambda _turn: system, {}),
            ("b", naive(system), {}),
            ("c0", lambda _turn: system, {"tool_results": True}),
            ("c", lambda _turn: system, {"tool_results": True, "compaction": COMPACTION}),
        ]
        runs = []
        for name, system_for, options in plan:
            await flush(provider)
            runs.append(await converse(provider, Run(name), system_for, args, **options))
            print(f"({name}) done in {runs[-1].seconds:.0f} s", file=sys.stderr)
        tokens = await count_tokens(model, json_tools.system_prompt(system, TOOLS))
    finally:
        await provider.aclose()
        await model.stop()
    report(runs, system, layer, tokens, time.monotonic() - started)


def report(runs: list[Run], system: str, layer: str, tokens: int, seconds: float) -> None:
    a, b, c0, c = runs
    files = [line for line in layer.splitlines() if line.startswith("- ") and line[2] != "…"]
    print(
        f"System prompt as sent: {tokens:,} tokens (with the read_file tool's description); "
        f"its repo-map layer is {len(layer):,} chars and shows {len(files)} files; "
        f"{datetime.now(UTC):%Y-%m-%d}, {len(a.prompt)} turns, "
        f"SmolLM2-135M on llama.cpp, 1 thread, RAM cache off.\n"
    )
    print(
        "| turn | (a) plane layout | (b) timestamp first | (c0) tool results | (c) + compaction |"
    )
    print("|---:|---:|---:|---:|---:|")
    for turn in range(len(a.prompt)):
        mark = " ✂" if turn in c.compacted else ""
        cells = [a.share(turn), b.share(turn), c0.share(turn), c.share(turn) + mark]
        print(f"| {turn + 1} | " + " | ".join(cells) + " |")
    print("| **total** | " + " | ".join(f"**{r.total()}**" for r in runs) + " |")
    print("| uncached | " + " | ".join(f"{sum(r.prompt) - sum(r.cached):,}" for r in runs) + " |")
    print("| seconds | " + " | ".join(f"{r.seconds:.1f}" for r in runs) + " |")
    print(
        f"\nCells: cached_tokens/prompt_tokens (cached share), from the server's usage; "
        f"uncached: prompt tokens the server had to process. ✂: a compaction batch went on "
        f"that turn. Last turn's prompt: c0 {c0.prompt[-1]:,} tokens, c {c.prompt[-1]:,}. "
        f"Whole run: {seconds:.0f} s."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--max-output", type=int, default=12, help="tokens per answer")
    parser.add_argument(
        "--map-files",
        type=int,
        help="the repo map shows only this many of plane's modules (a smaller prompt, quicker)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="every step once, on a smaller prompt (one turn, a two-token answer, "
        "the role's first line, one module in the map, a one-case tool result), for CI",
    )
    args = parser.parse_args()
    args.role, args.cases = ROLE, 10
    if args.smoke:
        args.turns, args.max_output, args.map_files = 1, 2, 1
        args.role, args.cases = ROLE.splitlines()[0], 1
    asyncio.run(measure(args))


if __name__ == "__main__":
    main()
