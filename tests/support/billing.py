"""An upstream that bills exactly what it is asked, and the ground truth of
what it billed: the gateway's money tests compare the ledger with it.

`Bills` answers every request of the scripted server (`llm.responder =
Bills(...)`): its prompt as every scripted reply counts it (characters / 4),
plus `held` tokens of context the provider holds or fetches (a document by
URL, a previous response, search results: what the body does not show), and
per answer (`n` of them) `writes` tokens, or the request's own limit when
that is lower. The server keeps every response it sent to its last byte
(`ScriptedLLM.billed`): `billed_usd` prices them as the plane would.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from plane.money.pricing import Pricer
from plane.wire.protocol import Usage
from tests.support.scripted_llm import Billed, Reply, derived_usage

LIMITS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


def output_limit(body: dict[str, Any]) -> int | None:
    for key in LIMITS:
        value = body.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return None


@dataclass(frozen=True)
class Bills:
    writes: int = 10
    """Tokens the model writes per answer, when the request lets it."""
    held: int = 0
    """Prompt tokens the provider adds that the body does not show."""
    delay_s: float = 0.3
    """Seconds each answer takes (every call asked at once is in flight together)."""
    searches: int = 0
    """Web searches a server tool makes per call (billed per search)."""

    def usage(self, body: dict[str, Any]) -> Usage:
        limit = output_limit(body)
        per_answer = self.writes if limit is None else min(self.writes, limit)
        n = body.get("n")
        answers = n if isinstance(n, int) and n > 0 else 1
        prompt = derived_usage(body, "").input_tokens + self.held
        return Usage(input_tokens=prompt, output_tokens=per_answer * answers)

    def __call__(self, body: dict[str, Any], serial: int) -> Reply:
        limit = output_limit(body)
        reached = limit is not None and self.writes >= limit
        return Reply(
            "billed",
            self.usage(body),
            delay_s=self.delay_s,
            cut_at_limit=reached,
            searches=self.searches,
        )


def billed_usd(billed: list[Billed], pricer: Pricer) -> Decimal:
    """What the upstream billed for these responses, at the plane's prices."""
    return sum((cost_of(b, pricer) for b in billed), Decimal(0))


def cost_of(billed: Billed, pricer: Pricer) -> Decimal:
    """One response's bill: its tokens, and its web searches when it made any."""
    return pricer.price(billed.model, billed.usage, searches=billed.searches).cost_usd


def held_within_a_call(
    spent: Decimal, ceiling: Decimal, billed: list[Billed], pricer: Pricer
) -> None:
    """The day's spend is what the upstream billed, exactly, and ends within
    one call of the ceiling either way: over it by at most the dearest call,
    and short of it by no more (a call that fitted was not refused)."""
    assert spent == billed_usd(billed, pricer)
    largest = max((cost_of(b, pricer) for b in billed), default=Decimal(0))
    assert spent <= ceiling + largest, f"${spent} spent: {len(billed)} calls went"
    assert spent >= ceiling - largest, "a call that fitted was refused"
