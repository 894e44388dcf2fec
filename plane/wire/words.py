"""Dollars, tokens and durations as people read them, in the conversation, the CLI and
the TUI alike.

Money is `Decimal` from the price table to the screen; these are the only
places a figure is rounded, and only for display. A figure is never rounded
down to `$0.00` when something was spent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from decimal import ROUND_DOWN, ROUND_HALF_UP, ROUND_UP, Decimal
from pathlib import PurePath
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a type only: the clock and the CLI word durations without pydantic
    from plane.wire.protocol import Usage

CENT = Decimal("0.01")
UNPRICED = "unpriced"
"""A call whose model has no known price: its price source in the ledger
(recorded at $0, which is not its cost) and the word shown for its cost,
never a figure: unknown never reads as free."""
FLOOR = "which has no known price"
"""How the ledger's price source of a call priced at a floor ends: the model
that answered has no known price, so the call was priced as the one asked
for, which is at least what it cost, not what it cost. Its line says
`$0.0002 + unpriced`, and so do the charts."""


def unpriced_call(price_source: str) -> bool:
    """Whether a call's cost is not all known: no price at all (`UNPRICED`,
    at $0) or a floor (`FLOOR`, the rest unknown)."""
    return price_source == UNPRICED or floor_priced(price_source)


def floor_priced(price_source: str) -> bool:
    """Whether a call was priced at a floor (`FLOOR`): it cost at least
    its amount, and what more is unpriced."""
    return price_source.endswith(FLOOR)


def at_a_floor(figure: str) -> str:
    """A figure that is a floor, as a call's line and the ledger say it:
    `$0.0002 + unpriced` (it cost at least that, the rest is not known)."""
    return f"{figure} + {UNPRICED}"


def not_all_priced(unpriced: int, floor: int) -> str:
    """What a sum of calls does not know, after its figure: calls no price
    is known for (`(1 unpriced, not in the total)`: at $0, which is not
    their cost), calls priced at a floor (`(1 priced at a floor, the rest
    of its cost unpriced)`: in the total at their floor, which they cost at
    least, as their line says `$0.0002 + unpriced`), both, or nothing. "The
    rest" is said of the call's cost, never left to read as the other calls."""
    said = [f"{unpriced} {UNPRICED}, not in the total"] if unpriced else []
    if floor:
        said.append(
            f"{floor} priced at a floor, the rest of {'its' if floor == 1 else 'their'}"
            f" cost {UNPRICED}"
        )
    return f" ({'; '.join(said)})" if said else ""


def terminal_safe(text: str) -> str:
    """`text` with its control characters shown, not obeyed (`\\x1b`,
    `\\r`), line breaks and tabs kept: a conversation printed to a terminal
    carries what models and tools wrote, and an escape sequence or a carriage
    return in it would recolour, retitle or overwrite the operator's screen."""
    return _CONTROL.sub(lambda found: repr(found.group())[1:-1], text)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 and C1 controls and DEL, but for tab and line feed."""


def whole_text(text: str) -> str:
    """`text` with each lone surrogate (`\\udcff`, which JSON may carry but no
    store, file or socket can encode) as U+FFFD, as a UTF-8 decoder shows a
    broken byte; any other text unchanged."""
    return _SURROGATE.sub("\ufffd", text)


_SURROGATE = re.compile("[\\ud800-\\udfff]")


def usd(amount: Decimal) -> str:
    """`$4.10`; amounts under a cent that are not zero show as `<$0.01`, so
    spend that exists never reads as nothing."""
    if Decimal(0) < amount < Decimal("0.005"):
        return "<$0.01"
    return f"${amount.quantize(CENT, rounding=ROUND_HALF_UP):,.2f}"


def in_flight_apart(in_flight: Decimal) -> str:
    """` (+$0.87 in flight)`: calls in flight at their estimates, said apart
    from what was spent (they are the most those calls may cost, not money
    spent); nothing when none flies."""
    return f" (+{usd(in_flight)} in flight)" if in_flight > 0 else ""


def spend_against(spent: Decimal, ceiling: Decimal | None) -> str:
    """The day's spend beside its ceiling, with as many decimals as it takes
    for the two figures to stand as the amounts do: `$0.019 of $0.02` (amber,
    not yet there), `$0.021 of $0.02` (over), never `$0.02 of $0.02` unless it
    is exactly there. Cents whenever cents tell it (`$4.10 of $5.00`); more
    digits only near a ceiling, rounded away from it, so a figure under the
    ceiling never reads as reaching it."""
    shown = usd(spent)
    if ceiling is None:
        return shown
    limit = ceiling.quantize(CENT, rounding=ROUND_HALF_UP)
    side = _compare(spent, ceiling)
    if shown.startswith("<"):  # `<$0.01`: under any ceiling of a cent or more
        if side < 0 and limit >= CENT:
            return shown
    elif _compare(spent.quantize(CENT, rounding=ROUND_HALF_UP), limit) == side:
        return shown
    rounding = ROUND_DOWN if side < 0 else ROUND_UP
    for places in range(3, 9):
        figure = spent.quantize(Decimal(1).scaleb(-places), rounding=rounding)
        if _compare(figure, limit) == side and (figure > 0) == (spent > 0):
            return f"${figure:,.{places}f}"
    return f"${spent:,f}"


def apart(more: Decimal, less: Decimal) -> tuple[str, str]:
    """Two figures, the first the larger, worded so that they read so: in
    cents when cents tell them apart (`$0.20` and `$0.10`), else with the
    digits it takes (`$0.008` and `$0.002`, never `$0.01` beside `<$0.01`,
    which says neither which is larger nor by how much)."""
    cents = more.quantize(CENT, rounding=ROUND_HALF_UP), less.quantize(CENT, rounding=ROUND_HALF_UP)
    if more <= less or (cents[0] > cents[1] and (less == 0 or cents[1] > 0)):
        return usd(more), usd(less)
    for places in range(3, 9):
        step = Decimal(1).scaleb(-places)
        big, small = (x.quantize(step, rounding=ROUND_HALF_UP) for x in (more, less))
        if big > small and (less == 0 or small > 0):
            return f"${big:,.{places}f}", f"${small:,.{places}f}"
    return f"${more:,f}", f"${less:,f}"


def more_than(parts: Sequence[Decimal], whole: Decimal) -> tuple[list[str], str]:
    """Figures that together come to more than `whole`, and `whole`, worded
    so that they read so: in cents when cents tell it (`$0.21` and `$0.21`,
    more than `$0.40`), else with the digits it takes (`$0.044` and `$0.003`,
    more than `$0.046`; never `$0.04` and `<$0.01` beside `$0.05`, which do
    not add up to more). A figure that is not zero never reads as zero."""
    for places in range(2, 9):
        step = Decimal(1).scaleb(-places)
        amounts = (*parts, whole)
        shown = [x.quantize(step, rounding=ROUND_HALF_UP) for x in amounts]
        kept = all((figure > 0) == (x > 0) for figure, x in zip(shown, amounts, strict=True))
        if kept and sum(shown[:-1], Decimal(0)) > shown[-1]:
            said = [f"${figure:,.{places}f}" for figure in shown]
            return said[:-1], said[-1]
    return [f"${x:,f}" for x in parts], f"${whole:,f}"


def spend_priced(
    spent: Decimal, ceiling: Decimal | None, *, price_known: bool, floor_priced: bool
) -> str:
    """An agent's spend as its row says it: `spend_against`, or `$?` on a
    model with no known price (its calls count $0, which is not what they
    cost), `$0.40+$?` when some of its calls were priced, or when that is a
    floor. `plane status` and `plane show` say it alike."""
    figure = spend_against(spent, ceiling)
    if price_known and not floor_priced:
        return figure
    return f"{figure}+$?" if spent > 0 else "$?"


def spend_total(parts: Iterable[tuple[Decimal, Decimal | None]], unlisted: Decimal) -> str:
    """A day's spend summed over agents (`parts`: each one's spend and
    ceiling; `unlisted`: spend no part shows, agents deleted today), worded
    as the parts are: the fleet line beside the title bar says one figure
    one way. All of it one agent's, it is that agent's own figure (`$0.005`
    as its title has it against `$0.01`, never `$0.01`); several agents',
    it keeps as many decimals as the most precise of theirs shows."""
    spending = [(spent, ceiling) for spent, ceiling in parts if spent]
    total = sum((spent for spent, _ in spending), unlisted)
    figures = [spend_against(*part) for part in spending]
    alone = figures[0] if len(figures) == 1 and not unlisted else None
    return spend_summed(total, alone, max(map(decimals_shown, figures), default=2))


def spend_summed(total: Decimal, alone: str | None, places: int) -> str:
    """`spend_total` from what it reads of its parts, for a caller that
    keeps them as they change (the TUI's fleet line): `alone`, the one
    spending agent's own figure when the total is all its; `places`, the
    most decimals a spending agent's figure shows."""
    if alone is not None:
        return alone
    if places <= 2 or total >= 1:
        return usd(total)
    return f"${total.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP):,.{places}f}"


def decimals_shown(figure: str) -> int:
    """How many decimals a worded figure shows (`$0.019` → 3)."""
    return len(figure.rpartition(".")[2]) if "." in figure else 0


def _compare(a: Decimal, b: Decimal) -> int:
    return (a > b) - (a < b)


def not_in_cents(shown: str) -> str:
    """A ceiling with more than two decimals, refused alike by `/limit`, the
    edit form, `plane edit --limit` and agents.yaml (`$0.001` would read
    `$0.00`, a pause by its figure, while it lets calls through). Without
    an example: each says what to type in its own terms."""
    return f"{shown} has more than two decimals; a limit is in dollars and cents"


def usd_exact(amount: Decimal) -> str:
    """Cents always (for settings: `$5.00 a day`)."""
    return f"${amount.quantize(CENT, rounding=ROUND_HALF_UP):,.2f}"


def plain(amount: Decimal) -> str:
    """Exact, without trailing zeros or exponent (`0.12`, `5`): for machine
    output, where a figure must read back as the same Decimal."""
    return format(amount.normalize(), "f")


def tokens(count: int) -> str:
    """`320`, `12.4k`, `1.2M`: the unit is chosen after rounding, so 999,950
    reads `1M`, not `1000k`."""
    if count < 1000:
        return str(count)
    if round(count / 1000, 1) < 1000:
        return f"{count / 1000:.1f}k".replace(".0k", "k")
    return f"{count / 1_000_000:.1f}M".replace(".0M", "M")


NAMED = 20
"""How many names a list of agents says before `and N more` (`some_names`)."""


def some_names(names: Sequence[str]) -> str:
    """`a, b, c`; past `NAMED`, the first of them and `and 9,980 more`: a
    line that lists a fleet's agents (a group's, the agents a plane took)
    stays a line at 10,000 of them."""
    listed = ", ".join(names[:NAMED])
    return listed + (f", and {len(names) - NAMED:,} more" if len(names) > NAMED else "")


def call_count(count: int) -> str:
    """`1 call`, `2 calls`."""
    return f"{count:,} call{'' if count == 1 else 's'}"


def turn_cost(amount: Decimal) -> str:
    """A single turn's cost: cents, or four decimals when under a cent (a
    small model's turn costs fractions of a cent, and they add up); under
    those four, `<$0.0001`, so a cost that exists never reads as `$0.0000`."""
    if Decimal(0) < amount < Decimal("0.00005"):
        return "<$0.0001"
    if Decimal(0) < amount < CENT:
        return f"${amount.quantize(Decimal('0.0001'), rounding=ROUND_HALF_UP)}"
    return usd(amount)


def usage_text(usage: Usage) -> str:
    """`12.4k in (11.9k cached) · 320 out`."""
    cached = f" ({tokens(usage.cache_read_tokens)} cached)" if usage.cache_read_tokens else ""
    return f"{tokens(usage.input_tokens)} in{cached} · {tokens(usage.output_tokens)} out"


def turn_line(
    cost: Decimal,
    usage: Usage,
    saved_chars: int = 0,
    *,
    compacted_chars: int = 0,
    unpriced: bool = False,
) -> str:
    """The quiet line after a turn: `$0.03 · 12.4k in (11.9k cached) · 320 out`,
    and what compression and compaction saved, each under its own name.
    A turn with calls no price is known for says so instead of a figure that
    would read as free: `unpriced · 81 in · 27 out`, or `$0.03 + unpriced · …`
    when some of its calls were priced."""
    shown = turn_cost(cost)
    if unpriced:
        shown = at_a_floor(shown) if cost else UNPRICED
    line = f"{shown} · {usage_text(usage)}"
    if saved_chars:
        line += f" · compression saved {tokens(saved_chars)} chars"
    if compacted_chars:
        line += f" · compaction saved {tokens(compacted_chars)} chars"
    return line


def duration(left: timedelta) -> str:
    """`3h 05m`, `12m`, `40s`."""
    seconds = max(0, int(left.total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes = rest // 60
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m"
    return f"{seconds}s"


def store_unreachable(since: datetime) -> str:
    """What the plane says while its shared store (PostgreSQL) is away."""
    return f"The store is unreachable since {since:%H:%M:%S} UTC"


def store_failed(what: str, error: object) -> str:
    """A request or a call (`what`) its plane's store refused or could not take."""
    return f"The plane's store failed this {what}: {error}."


NEEDS_A_TERMINAL = (
    "the TUI needs a terminal: `plane status` shows the agents, "
    "`plane web` serves the TUI to a browser."
)
"""Said by `plane` and by `python -m tui` started without a terminal."""


def config_said(file: str | None, looked: Sequence[str]) -> str:
    """Which settings the plane runs on: `config: /srv/agents.yaml`, or
    `config: built-in defaults (no agents.yaml in /srv or ~/.config/plane)`,
    the answer to "where are my agents?" when a plane started elsewhere."""
    if file is not None:
        return f"config: {_path_shown(file)}"
    if not looked:
        return "config: built-in defaults"
    places = " or ".join(_path_shown(str(PurePath(place).parent)) for place in looked)
    return f"config: built-in defaults (no agents.yaml in {places})"


def _path_shown(path: str) -> str:
    """A path on one line, its control characters shown: a directory is
    anyone's to name, and an escape in its name would be obeyed by a terminal."""
    return terminal_safe(path).replace("\n", "\\n")


def send_refused(since: datetime) -> str:
    """A message sent while the store is away: refused, never acked and lost."""
    return (
        f"{store_unreachable(since)}: the message was not kept; "
        "send it again once the store is back."
    )


def request_refused(since: datetime, *, changes: bool) -> str:
    """Any other request the store being away stopped: said as a send's
    refusal is, and for one that `changes` something, that nothing did."""
    unchanged = "nothing changed; " if changes else ""
    return f"{store_unreachable(since)}: {unchanged}ask again once the store is back."


def file_agent_refusal(agent: str, change: str) -> str:
    """Why an agent from agents.yaml is not renamed or deleted (`change`:
    `rename` or `delete`), in the plane's words and the TUI's alike."""
    where = "remove its block" if change == "delete" else "rename its block"
    return f"{agent} comes from agents.yaml: {where} there and restart the plane."


NOTICES = (
    ("held", re.compile(r"^\S+ has reached its \$[\d,.]+ daily ceiling ")),
    ("held", re.compile(r"^\S+ has spent \S+ today, (at|over) its \$[\d,.]+ daily ceiling;")),
    ("held", re.compile(r"^\S+ is not answering: ")),
    ("held", re.compile(r"^\S+ is held: its group \S+ ")),
    ("held", re.compile(r"^\S+ is held: (it |its client |its last )")),
    ("held", re.compile(r"^No price is known for ")),
    ("paused", re.compile(r"^\S+ is paused: ")),
    ("paused", re.compile(r"^Paused by the operator: ")),
    ("warn", re.compile(r"^\S+ has spent \S+ today, \d+% of its \$[\d,.]+ daily ceiling\.$")),
    ("warn", re.compile(r"^\S+ is spending \S+ an hour over the last hour, ")),
    ("warn", re.compile(r"^\S+ switched to \S+ at \S+ of \$[\d,.]+ today \(fallback at ")),
)
"""The plane's notices that explain why an agent takes no turn (held:
its ceiling, the fleet's, its group's, a model with no price, a loop; paused) or that it
nears its ceiling (stepping down to its fallback) or spends far faster than it did
(warn), by their opening
words. A client draws them apart from routine plane lines;
tests/plane/agents/test_notice_kinds.py holds every notice's wording to these."""


def notice_kind(text: str) -> str | None:
    """`held`, `paused` or `warn` for a notice of those, None for any other
    line of the plane's."""
    for kind, opening in NOTICES:
        if opening.search(text):
            return kind
    return None


def reaches(ceiling: Decimal, at: datetime) -> str:
    """`reaches $5.00 at 14:20 UTC at this rate`: the forecast, as the title,
    `plane status` and `plane show` say it."""
    return f"reaches {usd_exact(ceiling)} at {at:%H:%M} UTC at this rate"


def pace(per_hour: Decimal) -> str:
    """`$1.20 an hour`."""
    return f"{usd(per_hour)} an hour"
