"""bench/bill.py's second part: the plane's own agents, per lever.

The same sessions as the gateway part, run by the plane itself: an agent
whose role is the ~15K-token system prompt; each session is turns of one to
three `run_command` calls (two on average, by a hash) and an answer. A call
is `cat` of the corpus sample, the command that printed it named after a
no-op `:` so the compressor gets the same hint; the model's words are the
gateway part's. The model is the scripted one of the tests
(tests/support/scripted_llm.py), a real HTTP server on the loopback;
everything between is the plane's own: turn loop, tools, compression,
compaction, prompt layout, provider wire formats, ledger and pricing. The
scripted server's usage is worked out by the provider's cache rules
(bill_sessions.Cache) from the request it received — after Headroom, in
Headroom's column, as its proxy would forward it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import tempfile
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

from bill import Bill, print_bills
from bill_sessions import Cache, Headroom, Material, Step, answer

import tests.support.scripted_llm as scripted
from plane.wire.protocol import Usage
from tests.support.fixtures_plane import NOON, launch
from tests.support.scripted_llm import ScriptedLLM

KEY_ENV = "PLANE_BENCH_SCRIPTED_KEY"
MODELS = {"claude-sonnet-4-5": "anthropic", "gpt-5": "openai-compatible"}
CONFIG = """
defaults:
  provider: scripted
  model: {model}
  max_calls_per_turn: 8
providers:
  scripted:
    kind: {kind}
    base_url: {base_url}
    api_key_env: {key_env}
    models: [{model}]
    max_retries: 0
compression:
  enabled: {compression}
session:
  compact_enabled: {compaction}
sandbox: false
agents:
{agents}
"""
LEVERS = {
    # name: (compression, compaction, Headroom)
    "none": (False, False, False),
    "plane: compression": (True, False, False),
    "plane: compaction": (False, True, False),
    "plane: both (defaults + compaction)": (True, True, False),
    "Headroom (its proxy)": (False, False, True),
}


class Provider:
    """The provider's side of the sessions: each agent's cache, Headroom in front."""

    def __init__(self, api: str, model: str, headroom: Headroom | None, tag: str) -> None:
        self.api, self.model, self.headroom, self.tag = api, model, headroom, tag
        self.caches: dict[str, Cache] = {}
        self.sent: dict[str, int] = {}
        self.current = ""

    def usage(self, body: dict[str, Any], text: str, calls: tuple[Any, ...] = ()) -> Usage:
        session = self.current
        messages = body["messages"]
        if self.headroom is not None:
            frozen = self.sent.get(session, 0)
            forwarded = self.headroom.forward(f"{self.tag}/{session}", messages, self.model, frozen)
            body = {**body, "messages": forwarded}
        self.sent[session] = len(messages)
        out = len(text) + sum(len(name) + len(json.dumps(args)) for name, args in calls)
        cache = self.caches.setdefault(
            session, Cache("anthropic" if self.api == "anthropic" else "openai")
        )
        return cache.usage(body, out)


@contextlib.contextmanager
def priced_by(provider: Provider) -> Iterator[None]:
    """The scripted server's usage, worked out by the provider's cache (the one seam)."""
    original = scripted.derived_usage
    scripted.derived_usage = provider.usage
    try:
        yield
    finally:
        scripted.derived_usage = original


async def run_lever(
    sessions: list[list[Step]],
    material: Material,
    model: str,
    lever: str,
    headroom: Headroom | None,
    root: Path,
) -> Bill:
    compression, compaction, with_headroom = LEVERS[lever]
    api = "anthropic" if MODELS[model] == "anthropic" else "openai"
    role = json.dumps(material.system)
    agents = "\n".join(f"  s{n}: {{role: {role}}}" for n in range(len(sessions)))
    provider = Provider(api, model, headroom if with_headroom else None, lever)
    with ScriptedLLM() as llm, priced_by(provider):
        config = CONFIG.format(
            model=model,
            kind=MODELS[model],
            base_url=llm.anthropic_url if api == "anthropic" else llm.base_url,
            key_env=KEY_ENV,
            compression=str(compression).lower(),
            compaction=str(compaction).lower(),
            agents=agents,
        )
        plane = await launch(root, llm, config)
        try:
            for n, steps in enumerate(sessions):
                await _session(plane, llm, provider, n, steps)
            bill = Bill(Usage(), Decimal(0))
            for entry in await plane.services.ledger.entries(NOON.date()):
                bill.add(entry.usage, entry.cost_usd)
        finally:
            await plane.stop()
    return bill


async def _session(
    plane: Any, llm: ScriptedLLM, provider: Provider, n: int, steps: list[Step]
) -> None:
    agent = f"s{n}"
    provider.current = agent
    workspace = plane.services.roster.get(agent).workspace
    workspace.mkdir(parents=True, exist_ok=True)  # its first turn would make it
    for k, step in enumerate(steps):
        (workspace / f"out_{k:03}.txt").write_text(step.output, encoding="utf-8")
    start, part = 0, 1
    while start < len(steps):
        end = min(start + turn_steps(n, part), len(steps))
        for k in range(start, end):
            command = f"cat out_{k:03}.txt; : {shlex.quote(steps[k].command)}"
            llm.reply(answer(n, k), tool_calls=[("run_command", {"command": command})])
        llm.reply(answer(n, start, final=True))
        await plane.turn(agent, f"Task {n}, part {part}: carry on.", within=300)
        start, part = end, part + 1


def turn_steps(session: int, part: int) -> int:
    """How many tool calls a turn makes: one to three, by a hash (two on average)."""
    return 1 + int(hashlib.sha256(f"{session}:{part}".encode()).hexdigest()[:8], 16) % 3


async def agents_part(
    sessions: list[list[Step]], material: Material, headroom: Headroom | None, smoke: bool
) -> dict[str, dict[str, Bill]]:
    os.environ[KEY_ENV] = "scripted"
    found = {}
    for model in MODELS:
        bills = {}
        for lever in LEVERS:
            if LEVERS[lever][2] and headroom is None:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                bills[lever] = await run_lever(
                    sessions, material, model, lever, headroom, Path(tmp)
                )
        steps = sum(len(s) for s in sessions)
        print_bills(
            f"the plane's own agents ({model}): {len(sessions)} sessions, {steps} tool calls", bills
        )
        shares(bills)
        found[model] = bills
    return found


def shares(bills: dict[str, Bill]) -> None:
    """Each lever's part of what the plane saves with both on."""
    off = bills["none"].cost
    both = off - bills["plane: both (defaults + compaction)"].cost
    if both <= 0:
        print("  the plane saved nothing here")
        return
    for lever in ("plane: compression", "plane: compaction"):
        alone = off - bills[lever].cost
        print(
            f"  {lever.removeprefix('plane: ')} alone saves {100 * alone / off:.1f}% "
            f"({100 * alone / both:.0f}% of what both save)"
        )
    if "Headroom (its proxy)" in bills:
        theirs = off - bills["Headroom (its proxy)"].cost
        ratio = f"{both / theirs:.1f}×" if theirs > 0 else "∞ (Headroom saved nothing)"
        print(f"  Headroom saves {100 * theirs / off:.1f}%: the plane saves {ratio} as much")
