"""What a gateway call will likely cost, and the most it can, before it is sent.

Two figures, because admission needs both (`plane.gateway.admission`):

- **likely**: the prompt counted from the body (characters / 3.5; an image at
  the tokens the providers count for it), what the provider holds that the
  ledger can size (a previous response, a stored prompt's last use), and per
  answer the tokens this agent's answers really have, capped by the
  request's limit; times what the agent's calls really cost against such an
  estimate (`plane.gateway.learned`). It is what a call in flight counts
  while it flies, and what it is charged if it ends without its usage.
- **bound**: the most the call can bill: every prompt byte a token (a
  byte-level tokenizer makes no more), written to the dearest cache, plus
  what the provider wraps around it (`Asked.framing`); every answer at its limit; every web
  search it may make. Context the provider adds and an answer without a
  limit are bounded by the model's context window where the price table
  knows it, and unbounded (None) where it does not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from decimal import ROUND_CEILING, Decimal

from plane.gateway.asked import Asked, image_tokens
from plane.gateway.learned import Learning
from plane.money.pricing import Pricer
from plane.wire.protocol import Usage

COLD_OUTPUT = 1024
"""An answer's likely tokens before any of the agent's calls has settled."""
CHARS_PER_TOKEN = 3.5
WIDE_CONTEXT = 1_000_000
"""The context window Anthropic's `context-1m` beta opens (wider than the table's)."""
MICRO = Decimal("0.000001")
MOST_FALLBACKS = 16
"""The most fallback models a request's bound prices one by one (a router
tries a few; a body of thousands is not priced thousands of times a call)."""


@dataclass(frozen=True)
class Estimate:
    likely: Decimal
    bound: Decimal | None
    """The most it can cost; None: nothing bounds it."""
    prompt: int = 0
    """The prompt's likely tokens: what the call's real cost is learned against,
    with its real output (so what the answers' length explains is not learned twice)."""
    unknown: bool = False
    """The provider adds context whose size neither the body nor the ledger tells."""
    answers: int | None = None
    """The most tokens its answers may have together (None: no bound)."""
    likely_answers: int = 0
    """The tokens its answers will likely have together."""


class Estimator:
    def __init__(self, pricer: Pricer, learning: Learning) -> None:
        self._pricer = pricer
        self._learning = learning

    async def estimate(
        self, agent: str, model: str, asked: Asked, *, wide_context: bool = False
    ) -> Estimate:
        asked, held, bounded = await self._resolved(agent, asked)
        learned = await self._learning.of(agent)
        window = self._window(model, wide_context)
        image, _ = image_tokens(model)
        prompt = math.ceil(asked.chars / CHARS_PER_TOKEN) + asked.images * image + held
        cap = asked.output_limit or window
        answer = learned.likely_output() or COLD_OUTPUT
        answer = min(answer, cap) if cap else answer
        usage = Usage(input_tokens=prompt, output_tokens=answer * asked.choices)
        unknown = bool(asked.unseen)
        served = dict(asked.variant)
        priced = self._pricer.price(model, usage, searches=asked.searched, variant=served)
        likely = priced.cost_usd * learned.factor(unknown)
        answers = _answers(asked, window)
        bound = self._bound(model, asked, held if bounded else None, window, answers)
        bound = self._fallen_back(bound, asked, held if bounded else None, wide_context)
        if bound is not None:
            likely = min(likely, bound)  # never more likely than it can be
        return Estimate(
            _up(likely),
            None if bound is None else _up(bound),
            prompt,
            unknown,
            answers,
            usage.output_tokens,
        )

    def announced(
        self, model: str, asked: Asked, estimate: Estimate, usage: Usage
    ) -> tuple[Decimal, Decimal] | None:
        """The call's likely cost and bound once the provider has announced its
        prompt's tokens (Anthropic's first event): that prompt at its real
        price (its cache reads and writes told apart), with its answers as
        likely, and at their most. None when that bounds nothing (the provider
        may still add context, or the answers have no limit)."""
        if estimate.unknown or asked.unseen or estimate.answers is None or asked.searches is None:
            return None
        if asked.fallbacks:  # announced by whichever answered: priced as the one named, no bound
            return None
        price, served = self._pricer.price, dict(asked.variant)
        likely = usage.model_copy(update={"output_tokens": estimate.likely_answers})
        most = usage.model_copy(update={"output_tokens": estimate.answers})
        return (
            _up(price(model, likely, searches=asked.searched, variant=served).cost_usd),
            _up(price(model, most, searches=asked.searches, variant=served).cost_usd),
        )

    async def _resolved(self, agent: str, asked: Asked) -> tuple[Asked, int, bool]:
        """`asked` without what the ledger sizes; the tokens that adds; and
        whether those are a bound (a previous response's are: it is what it was)."""
        held, bounded = 0, True
        unseen = list(asked.unseen)
        if asked.previous_response is not None:
            found = await self._learning.response_tokens(agent, asked.previous_response)
            if found is not None:
                held += found
                unseen.remove("previous_response_id")
        if asked.context_key is not None:
            found = await self._learning.context_tokens(agent, asked.context_key)
            if found is not None:
                held += found
                bounded = False  # a stored prompt's variables and a conversation change
                kind = "a stored prompt" if asked.context_key.startswith("prompt:") else None
                unseen.remove(kind or "a conversation")
        return replace(asked, unseen=tuple(unseen)), held, bounded

    def _window(self, model: str, wide_context: bool) -> int | None:
        """The model's context window, as wide as the client opened it."""
        window = self._pricer.context_window(model)
        if window is not None and wide_context:
            window = max(window, WIDE_CONTEXT)
        return window

    def _fallen_back(
        self, bound: Decimal | None, asked: Asked, held: int | None, wide_context: bool
    ) -> Decimal | None:
        """`bound`, or the most the call can bill if a model the router may
        fall back to answers it (charged as that model), where that is more.
        One with no known price is charged as the model named: it adds nothing.
        More than `MOST_FALLBACKS` are not each priced: nothing bounds the call."""
        if len(asked.fallbacks) > MOST_FALLBACKS:
            return None
        for other in asked.fallbacks:
            if bound is None:
                return None
            if not self._pricer.is_known(other):
                continue
            window = self._window(other, wide_context)
            theirs = self._bound(other, asked, held, window, _answers(asked, window))
            bound = None if theirs is None else max(bound, theirs)
        return bound

    def _bound(
        self, model: str, asked: Asked, held: int | None, window: int | None, answers: int | None
    ) -> Decimal | None:
        """The most the call can bill, or None. `held`: the tokens of context
        the ledger sized, None when that size is no bound."""
        prompt: int | None = None
        if not asked.unseen and held is not None:
            _, image = image_tokens(model)
            prompt = asked.bytes + asked.images * image + asked.framing + held
        if window is not None:
            prompt = window if prompt is None else min(prompt, window)
        if prompt is None or answers is None or asked.searches is None:
            return None
        # As asked (fast mode, a dearer tier), or as served by a server that ignores it.
        variants = [{}, dict(asked.variant)] if asked.variant else [{}]
        return max(
            self._pricer.estimate(
                model,
                prompt,
                answers,
                hour_cache=asked.hour_cache,
                searches=asked.searches,
                variant=variant,
                spoken=asked.spoken,
            )
            for variant in variants
        )


def _answers(asked: Asked, window: int | None) -> int | None:
    """The most tokens the answers may have together: each up to the request's
    limit, or the model's context window (None: neither is known), and a
    predicted output the answer may not use (billed as output all the same)."""
    answer = asked.output_limit or window
    if window is not None and answer is not None:
        answer = min(answer, window)
    return None if answer is None else answer * asked.choices + asked.predicted


def _up(amount: Decimal) -> Decimal:
    """To the micro-dollar, never down: an estimate is not rounded into a smaller one."""
    return amount.quantize(MICRO, rounding=ROUND_CEILING)
