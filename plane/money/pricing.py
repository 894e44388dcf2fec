"""What an LLM call cost, in exact Decimal dollars, and where the price came from.

Two sources, in order:

1. `pricing:` in agents.yaml (USD per 1M tokens), matched by model substring,
   case-insensitively; the longest matching key wins.
2. The `genai-prices` package's bundled table. It is only read: its price
   updater (which fetches over the network) is never started.

A model neither knows raises `UnknownPrice`: a call is never priced as free
because nobody said what it costs.

Usage arrives normalised (`plane.wire.protocol.Usage`): `input_tokens` counts
every prompt token, and the cache reads and writes are parts of it. That is
also how genai-prices reads its `input_tokens`, so both sources price the
same four counts the same way: uncached input at the input price, cache
reads and writes at theirs, output at the output price. The audio parts of
the input and the output are priced at genai-prices' audio rates where its
table has some (OpenAI's audio models); an agents.yaml price has none, and
prices them as the rest.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from decimal import Decimal
from fractions import Fraction
from importlib.metadata import version

import genai_prices
import genai_prices.data_snapshot

from plane.config import Price
from plane.errors import UnknownPrice
from plane.money import attribution
from plane.money.attribution import Part, Piece, attribute
from plane.wire.protocol import Usage

MILLION = Decimal(1_000_000)
GENAI_PRICES = f"genai-prices {version('genai-prices')}"
WEB_SEARCH_PER_1K = Decimal(10)
"""A web search's price per 1,000 where no table gives one: Anthropic's and
OpenAI's ($10 per 1,000 searches)."""
FILE_SEARCH_PER_1K = Decimal("2.5")
"""A file search's price per 1,000 (OpenAI's `file_search`) where no table
gives one: OpenAI's ($2.50 per 1,000 calls)."""
CONTAINER_PER_GB = Decimal("0.03")
"""A code interpreter container's price per GB of its memory (OpenAI's
`code_interpreter`: $0.03 for 1 GB, the default, up to $1.92 for 64 GB);
genai-prices has none."""


@dataclass(frozen=True)
class Fees:
    """What a call's server tools used that is billed by the use, beside the tokens."""

    searches: int = 0
    """Web searches."""
    file_searches: int = 0
    """OpenAI's `file_search` calls."""
    container_gb: int = 0
    """GB of the code interpreter containers it ran code in (a 4 GB one counts 4)."""


@dataclass(frozen=True)
class Priced:
    cost_usd: Decimal
    source: str
    """Where the price came from, as the ledger records it, e.g.
    "agents.yaml pricing 'smollm2'" or "genai-prices 0.2.3 (openai gpt-4o)"."""


def override_cost(price: Price, usage: Usage) -> Decimal:
    """The cost of `usage` at a per-1M price; cache prices default to the input price."""
    read = usage.cache_read_tokens
    written = usage.cache_write_tokens
    hour = min(usage.cache_write_1h_tokens, written)
    uncached = max(0, usage.input_tokens - read - written)
    write_price = price.input if price.cache_write is None else price.cache_write
    per_million = (
        uncached * price.input
        + read * (price.input if price.cached_input is None else price.cached_input)
        + (written - hour) * write_price
        + hour * (write_price if price.cache_write_1h is None else price.cache_write_1h)
        + usage.output_tokens * price.output
    )
    return per_million / MILLION


Variant = Mapping[str, str]
"""How a call was served, where the price table has prices for it:
OpenAI's `service_tier` (`priority`, or `fast`, about twice the default;
`flex` half), Anthropic's `speed` (`fast`, about twice)."""


KNOWN_KEPT = 4096
"""How many model names `Pricer.is_known` keeps its answer for: the names a
gateway's upstream says answered are the upstream's to choose, and a table
of them must not grow without end (past it, each is looked up again)."""


class Pricer:
    def __init__(self, overrides: Mapping[str, Price]) -> None:
        self._overrides = sorted(
            ((key.lower(), key, price) for key, price in overrides.items()),
            key=lambda entry: -len(entry[0]),
        )
        self._known: dict[str, bool] = {}
        """`is_known`'s answers: asked several times a call, and both tables are fixed."""
        self._rates: dict[Hashable, Mapping[str, Fraction]] = {}
        self._flat: dict[int, _Flat] = {}
        """What each of genai-prices' price sets is like, by its id (each
        kept alive by its table, which is never replaced)."""

    def override_for(self, model: str) -> tuple[str, Price] | None:
        """The agents.yaml key and price that match `model`, longest key first."""
        lowered = model.lower()
        for lowered_key, key, price in self._overrides:
            if lowered_key in lowered:
                return key, price
        return None

    def price(
        self,
        model: str,
        usage: Usage,
        *,
        at: datetime | None = None,
        searches: int = 0,
        variant: Variant | None = None,
        fees: Fees = Fees(),
    ) -> Priced:
        """The cost of one call, with the web searches a server tool made in it
        (`searches`, or `fees`, with what its other server tools used).
        `at` is when it was made (prices change over time in genai-prices'
        table); None is now. `variant`: how it was served, where that has a
        price of its own (`Variant`)."""
        fees = replace(fees, searches=searches) if searches else fees
        if (match := self.override_for(model)) is not None:
            key, price = match
            cost = override_cost(price, usage) + _fees_at(price, fees)
            return Priced(cost, f"agents.yaml pricing {key!r}")
        calculation = _calc(model, _genai_usage(usage, fees), at, variant)
        if calculation is None:
            raise UnknownPrice(model)
        cost = Decimal(calculation.total_price) + _unpriced_fees(model, usage, at, variant, fees)
        where = f"{calculation.provider.id} {calculation.model.id}"
        return Priced(cost, f"{GENAI_PRICES} ({where})")

    def attribute(
        self, model: str, pieces: Sequence[Piece], usage: Usage, cost: Decimal
    ) -> list[Part]:
        """`cost`, what a call of `model` with `usage` was charged, split over
        the pieces of its prompt and its answer (`plane.money.attribution`)."""
        return attribute(
            pieces,
            usage,
            cost,
            lambda used: self.price(model, used).cost_usd,
            lambda tokens: self.band_rates(model, tokens),
        )

    def band_rates(self, model: str, tokens: int) -> Mapping[str, Fraction]:
        """What `attribution.band_rates` says for `model` at a prompt of
        `tokens`, priced once for every prompt the same rates apply to: a
        price is a sum of each kind of token's count times its rate, so a
        token's price is one figure until the table changes (its prices by
        date or time of day) or the prompt crosses one of its tiers. A table
        that charges by the request as well is priced each time."""
        now = datetime.now(UTC)
        key = self._rates_key(model, tokens, now)
        if key is None or (rates := self._rates.get(key)) is None:
            rates = attribution.band_rates(
                tokens, lambda used: self.price(model, used, at=now).cost_usd
            )
            if key is not None:
                self._rates[key] = rates
        return rates

    def _rates_key(self, model: str, tokens: int, now: datetime) -> Hashable | None:
        """Which of `band_rates`' answers hold for `model` at `tokens` at
        `now`; None: none can be kept."""
        if (match := self.override_for(model)) is not None:
            return match[0]
        if (found := _model_info(model)) is None:
            return None
        prices = found.get_prices(now)
        if (flat := self._flat.get(id(prices))) is None:
            flat = self._flat[id(prices)] = _Flat.of(prices)
        if flat.per_request:
            return None
        return (model, id(prices), sum(tokens > start for start in flat.tier_starts))

    def context_window(self, model: str) -> int | None:
        """The most tokens the model reads and writes in one call, where
        genai-prices says (a bound on what a call can bill); None: unknown."""
        if self.override_for(model) is not None:
            return None
        calculation = _calc(model, _genai_usage(Usage()))
        return None if calculation is None else calculation.model.context_window

    def is_known(self, model: str) -> bool:
        if (known := self._known.get(model)) is None:
            known = self.override_for(model) is not None or (
                _calc(model, _genai_usage(Usage())) is not None
            )
            if len(self._known) < KNOWN_KEPT:  # the names an upstream answers as are its own
                self._known[model] = known
        return known

    def estimate(
        self,
        model: str,
        prompt_tokens: int,
        max_output_tokens: int,
        *,
        hour_cache: bool = False,
        searches: int = 0,
        variant: Variant | None = None,
        spoken: bool = False,
    ) -> Decimal:
        """An upper bound on a call's cost before it is made (a pending ledger
        entry): every prompt token at the dearest of the input and cache-write
        prices (the 1-hour cache's too when the request asks for it), and every
        output token the call may produce (at the audio rate too, where the
        answer may be `spoken`)."""
        fresh = Usage(input_tokens=prompt_tokens, output_tokens=max_output_tokens)
        written = Usage(
            input_tokens=prompt_tokens,
            cache_write_tokens=prompt_tokens,
            output_tokens=max_output_tokens,
        )
        ways = [fresh, written]
        if hour_cache:
            ways.append(written.model_copy(update={"cache_write_1h_tokens": prompt_tokens}))
        if spoken:
            audio = {"output_audio_tokens": max_output_tokens}
            ways += [way.model_copy(update=audio) for way in ways]
        priced = (self.price(model, usage, searches=searches, variant=variant) for usage in ways)
        return max(price.cost_usd for price in priced)


@dataclass(frozen=True)
class _Flat:
    """Whether a genai-prices price set charges by the request too, and
    where its tiers start (by the prompt's tokens)."""

    per_request: bool
    tier_starts: tuple[int, ...]

    @staticmethod
    def of(prices: genai_prices.types.ModelPrice) -> _Flat:
        starts = {
            tier.start
            for value in vars(prices).values()
            if isinstance(value, genai_prices.types.TieredPrices)
            for tier in value.tiers
        }
        per_request = prices.calc_price(_genai_usage(Usage()))["total_price"] != 0
        return _Flat(per_request, tuple(sorted(starts)))


def _model_info(model: str) -> genai_prices.types.ModelInfo | None:
    """The table's entry `_calc` prices `model` by, or None."""
    snapshot = genai_prices.data_snapshot.get_snapshot()
    attempts: list[str | None] = [None, "openrouter"] if "/" in model else [None]
    for provider_id in attempts:
        try:
            return snapshot.find_provider_model(model, None, provider_id, None)[1]
        except LookupError:
            continue
    return None


def _genai_usage(usage: Usage, fees: Fees = Fees()) -> genai_prices.Usage:
    audio, read = min(usage.input_audio_tokens, usage.input_tokens), usage.cache_read_tokens
    used = {
        "web_searches": fees.searches,
        "storage_searches": fees.file_searches,
        "input_audio_tokens": audio,
        "output_audio_tokens": min(usage.output_audio_tokens, usage.output_tokens),
    }
    if audio and read:
        # Which audio tokens were read from the cache no usage says: as few as
        # can be, the dearest reading (the cache takes more off audio's price
        # than off text's); said even when none, as genai-prices asks.
        used["cache_audio_read_tokens"] = max(0, audio + read - usage.input_tokens)
    return genai_prices.Usage(
        input_tokens=usage.input_tokens,
        cache_read_tokens=read,
        cache_write_tokens=usage.cache_write_tokens,
        cache_write_1h_tokens=min(usage.cache_write_1h_tokens, usage.cache_write_tokens),
        output_tokens=usage.output_tokens,
        **{key: count for key, count in used.items() if count or key.startswith("cache_")},
    )


def _unpriced_fees(
    model: str, usage: Usage, at: datetime | None, variant: Variant | None, fees: Fees
) -> Decimal:
    """The fees genai-prices' table has no price for, at the defaults:
    never free because nobody said what they cost."""
    cost = fees.container_gb * CONTAINER_PER_GB
    kinds = (
        (Fees(searches=fees.searches), WEB_SEARCH_PER_1K),
        (Fees(file_searches=fees.file_searches), FILE_SEARCH_PER_1K),
    )
    if not fees.searches and not fees.file_searches:
        return cost
    plain = _calc(model, _genai_usage(usage), at, variant)
    for alone, per_1k in kinds:
        used = alone.searches + alone.file_searches
        if not used or plain is None:
            continue
        priced = _calc(model, _genai_usage(usage, alone), at, variant)
        if priced is not None and priced.total_price == plain.total_price:
            cost += used * per_1k / 1000  # the table has no price for it
    return cost


def _fees_at(price: Price, fees: Fees) -> Decimal:
    """`fees` at an agents.yaml price, its defaults where it sets none."""
    search = WEB_SEARCH_PER_1K if price.web_search is None else price.web_search
    file_search = FILE_SEARCH_PER_1K if price.file_search is None else price.file_search
    per_gb = CONTAINER_PER_GB if price.code_interpreter is None else price.code_interpreter
    return (
        fees.searches * search / 1000
        + fees.file_searches * file_search / 1000
        + fees.container_gb * per_gb
    )


def _calc(
    model: str,
    usage: genai_prices.Usage,
    at: datetime | None = None,
    variant: Variant | None = None,
) -> genai_prices.types.PriceCalculation | None:
    """genai-prices' calculation, or None when it does not know the model.
    A `vendor/model` name (OpenRouter's style) is looked up at OpenRouter;
    `variant` picks the table's prices for it, where it has some."""
    attempts: list[str | None] = [None, "openrouter"] if "/" in model else [None]
    context = dict(variant) if variant else None
    for provider_id in attempts:
        try:
            return genai_prices.calc_price(
                usage,
                model,
                provider_id=provider_id,
                genai_request_timestamp=at,
                price_context=context,
            )
        except LookupError:
            continue
    return None
