"""What the plane does to the bill, on sessions shaped like real agents', priced as users pay.

    .venv/bin/python bench/bill.py [--sessions 10] [--steps 30] [--corpus DIR]
                                   [--part gateway|agents|both] [--no-headroom] [--smoke]

Two parts, each with no compression, the plane, and Headroom (headroom-ai in
bench/.venv-headroom, run as its proxy runs: see compress_headroom.py
--proxy), over the same sessions (bench/bill_sessions.py: a ~15K-token
system prompt, tools of realistic size, tool outputs of real commands from
the corpus, answers of one to six sentences):

- gateway: Claude Code's and Codex's requests on the wire, as each client
  shapes them, through the gateway's own compressor with an agent's defaults
  (`gateway: {}`), priced with each API's cache rules (claude-sonnet-4-5:
  writes 1.25×, reads 0.1×; gpt-5: automatic cached input at its rate), by
  genai-prices through the plane's Pricer. Aim: the plane saves ≥ 35% of the
  Claude Code bill, its cache hit rate no more than 2 points under no
  compression's (it may be higher: a smaller new result is a smaller part of
  the prompt that the cache cannot hold yet).
- agents: the plane's own agents (bench/bill_agents.py): the same sessions
  through the plane's turn loop, per lever: tool-output compression, history
  compaction on its defaults, both.

`--smoke` runs a tiny size of each (two sessions of three steps, no
Headroom), for CI: it checks the script runs, not the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bill_sessions import (  # noqa: E402
    Cache,
    Headroom,
    Material,
    Step,
    chat_back,
    claude_code,
    codex,
    output_chars,
    responses_as_chat,
    steps_of,
)
from compress import DEV_CORPUS, ensure_headroom  # noqa: E402

from plane.config import parse_config  # noqa: E402
from plane.gateway.apis import Messages, Responses, Wire  # noqa: E402
from plane.money.pricing import Pricer  # noqa: E402
from plane.wire.protocol import Usage  # noqa: E402

GATEWAY_DEFAULTS = """
providers:
  anthropic: {kind: anthropic}
agents:
  claude: {provider: anthropic, gateway: {}}
"""
AIM_SAVED = 0.35
AIM_HIT_POINTS = 2.0


@dataclass
class Bill:
    usage: Usage
    cost: Decimal
    requests: int = 0

    @property
    def hit(self) -> float:
        """Prompt tokens read from the cache, as a share of all prompt tokens."""
        return (
            self.usage.cache_read_tokens / self.usage.input_tokens if self.usage.input_tokens else 0
        )

    def add(self, usage: Usage, cost: Decimal) -> None:
        self.usage, self.cost, self.requests = (
            self.usage + usage,
            self.cost + cost,
            self.requests + 1,
        )


@dataclass(frozen=True)
class Client:
    name: str
    model: str
    api: str
    wire: Wire
    requests: Callable[[Material, int, list[Step]], list[dict[str, Any]]]


CLIENTS = (
    Client("Claude Code", "claude-sonnet-4-5", "anthropic", Messages(), claude_code),
    Client("Codex", "gpt-5", "openai", Responses(), codex),
)


def gateway_compresses() -> bool:
    """Whether a gateway agent with no settings compresses (the default under test)."""
    block = parse_config(GATEWAY_DEFAULTS).agents["claude"].gateway
    return block is not None and block.compress


def _plane(client: Client) -> Callable[[str, dict[str, Any], int], dict[str, Any]]:
    kept: dict[str, str] = {}
    on = gateway_compresses()

    def send(_session: str, body: dict[str, Any], _frozen: int) -> dict[str, Any]:
        return client.wire.compressed(body, kept.update)[0] if on else body

    return send


def _headroom(client: Client, headroom: Headroom) -> Callable[[str, dict[str, Any], int], Any]:
    def send(session: str, body: dict[str, Any], frozen: int) -> dict[str, Any]:
        if client.api == "anthropic":
            messages = headroom.forward(session, body["messages"], client.model, frozen)
            return {**body, "messages": messages}
        chat = responses_as_chat(body["input"])
        forwarded = headroom.forward(session, chat, client.model, frozen)
        return {**body, "input": chat_back(body["input"], forwarded)}

    return send


def replay(
    client: Client,
    sessions: list[list[Step]],
    material: Material,
    send: Callable[[str, dict[str, Any], int], dict[str, Any]] | None,
    tag: str,
) -> Bill:
    """Every session's requests, each as `send` forwards it, priced at the provider."""
    pricer = Pricer({})
    bill = Bill(Usage(), Decimal(0))
    for n, steps in enumerate(sessions):
        cache = Cache(client.api)
        previous = 0
        for request in client.requests(material, n, steps):
            body = request["body"]
            items = len(body.get("messages") or body.get("input") or ())
            if send is not None:
                body = send(f"{tag}/{n}", body, previous)
            previous = items
            usage = cache.usage(body, output_chars(request["reply"]))
            bill.add(usage, pricer.price(client.model, usage).cost_usd)
    return bill


def print_bills(title: str, bills: dict[str, Bill]) -> None:
    off = bills["none"]
    print(f"── {title}")
    print(f"{'':<26}{'input tok':>12}{'cache hit':>10}{'written':>11}{'bill':>10}{'change':>9}")
    for name, bill in bills.items():
        change = "" if bill is off else f"{100 * (float(bill.cost / off.cost) - 1):+8.1f}%"
        written = bill.usage.cache_write_tokens
        print(
            f"{name:<26}{bill.usage.input_tokens:>12,}{100 * bill.hit:>9.1f}%{written:>11,}"
            f" ${bill.cost:>8.2f}{change:>9}"
        )


def gateway_part(
    sessions: list[list[Step]], material: Material, headroom: Headroom | None
) -> dict[str, dict[str, Bill]]:
    """Claude Code and Codex through the gateway's compressor, and through Headroom."""
    found = {}
    for client in CLIENTS:
        bills = {"none": replay(client, sessions, material, None, "none")}
        bills["plane (gateway defaults)"] = replay(
            client, sessions, material, _plane(client), "plane"
        )
        if headroom is not None:
            bills["Headroom (its proxy)"] = replay(
                client, sessions, material, _headroom(client, headroom), client.name
            )
        steps = sum(len(s) for s in sessions)
        title = f"{client.name} ({client.model}): {len(sessions)} sessions, {steps} tool calls"
        print_bills(title, bills)
        found[client.name] = bills
    return found


def verdict(found: dict[str, dict[str, Bill]]) -> None:
    bills = found["Claude Code"]
    off, plane = bills["none"], bills["plane (gateway defaults)"]
    saved = 1 - float(plane.cost / off.cost)
    points = 100 * (plane.hit - off.hit)
    mark = "✓" if saved >= AIM_SAVED and points >= -AIM_HIT_POINTS else "✗"
    print(
        f"  {mark} Claude Code with gateway defaults: {100 * saved:.1f}% of the bill saved "
        f"(aim ≥ {100 * AIM_SAVED:.0f}%), cache hit rate {100 * plane.hit:.1f}% against "
        f"{100 * off.hit:.1f}% ({points:+.1f} points; aim: no lower than "
        f"{AIM_HIT_POINTS:.0f} points under)"
    )
    if "Headroom (its proxy)" in bills:
        theirs = 1 - float(bills["Headroom (its proxy)"].cost / off.cost)
        ratio = f"{saved / theirs:.1f}×" if theirs > 0 else "∞ (Headroom saved nothing)"
        print(f"    Headroom saves {100 * theirs:.1f}%: the plane saves {ratio} as much")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--steps", type=int, default=30, help="tool calls per session")
    parser.add_argument("--corpus", type=Path, default=DEV_CORPUS)
    parser.add_argument("--part", choices=["gateway", "agents", "both"], default="both")
    parser.add_argument("--no-headroom", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="a tiny run, for CI")
    args = parser.parse_args()
    if args.smoke:
        args.sessions, args.steps, args.no_headroom = 2, 3, True
    sessions = steps_of(args.corpus, args.sessions, args.steps)
    material = Material.make()
    headroom = None if args.no_headroom else Headroom(ensure_headroom())
    try:
        if args.part in ("gateway", "both"):
            verdict(gateway_part(sessions, material, headroom))
        if args.part in ("agents", "both"):
            from bill_agents import agents_part

            asyncio.run(agents_part(sessions, material, headroom, args.smoke))
    finally:
        if headroom is not None:
            headroom.close()


if __name__ == "__main__":
    main()
