"""`plane ledger --summary`: the ledger summed over the last days, by agent,
model, day, group, tag, session or tool, as text, JSON or CSV.

`--by tool` sums what each call's cost is attributed to (the README's
"Cost by tool"): its input's share of each tool's results, of its system
prompt and tool schemas `(prompt)`, of its messages `(messages)`, and its
answer `(answers)`; a call not split (in flight, cut, unpriced) counts
whole under `(unattributed)`. Its lines add up to the same total.

It reads the store itself, read-only, rather than asking the plane
(`plane.cli.offline`): the ledger is the record, and a summary of last week
is wanted most when no plane runs. The plane's
day is found the way the ledger finds it (the later of the clock's and the
latest day the ledger reached), so "today" is the same day the plane says.
"""

from __future__ import annotations

import argparse
import csv
import json
import sqlite3
import sys
from collections.abc import Callable
from datetime import date
from typing import Any, cast

from plane.cli.connect import remote
from plane.cli.offline import plane_day, reading
from plane.errors import PlaneError
from plane.home import Home
from plane.money.totals import (
    OLDER,
    PARTS_QUERY,
    QUERY,
    By,
    Line,
    summarise,
    summarise_tools,
    window,
)
from plane.wire.words import UNPRICED, call_count, not_all_priced, plain, tokens, usd

DEFAULT_DAYS = 7
MAX_DAYS = 3660
FIELDS = [
    "calls",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "cost_usd",
    "unpriced_calls",
    "floor_priced_calls",
]


def add_commands(sub: Any) -> None:
    """`--summary`, `--days` and `--by` on the `ledger` command, which keeps
    its own behaviour without them."""
    ledger = sub.choices["ledger"]
    ledger.add_argument(
        "--summary",
        action="store_true",
        help="sums over the last days instead of every call (read from the store itself: "
        "works with no plane running); --day is then the last day",
    )
    ledger.add_argument(
        "--days",
        type=days,
        help=f"with --summary: how many days, ending today (default {DEFAULT_DAYS})",
    )
    ledger.add_argument(
        "--by",
        choices=["agent", "model", "day", "group", "tag", "session", "tool"],
        help="with --summary: one line per agent (the default), model, day, group, "
        "tag (a gateway call's), session (a gateway client's) or tool (what each "
        "call's cost is attributed to)",
    )
    calls = ledger.get_default("func")
    ledger.set_defaults(func=_either(calls, ledger))


def days(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_DAYS:
        raise argparse.ArgumentTypeError(
            f"wants a whole number of days from 1 to {MAX_DAYS}, not {text!r}"
        )
    return int(text)


def _either(
    calls: Callable[[argparse.Namespace], int], parser: argparse.ArgumentParser
) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        if args.summary and remote() is not None:  # this machine's file is not that plane's
            parser.error(
                "--summary reads the ledger file of this machine's plane, not the one --tcp "
                "names: run it on that plane's machine"
            )
        if args.summary:
            return summary(args)
        if args.days is not None or args.by is not None:
            parser.error("--days and --by go with --summary")
        return calls(args)

    return run


def summary(args: argparse.Namespace) -> int:
    by = cast(By, args.by or "agent")
    with reading(Home.from_env()) as (conn, budgets):
        try:
            last = args.day or plane_day(conn)
            first, last = _window(last, args.days or DEFAULT_DAYS)
            span = (first.isoformat(), last.isoformat())
            rows = conn.execute(QUERY if budgets else QUERY.replace(*OLDER), span).fetchall()
            parts = conn.execute(PARTS_QUERY, span).fetchall() if by == "tool" and budgets else []
        except sqlite3.Error as error:  # either engine's (a PostgreSQL fault is one too)
            raise PlaneError(f"Cannot read the ledger ({error}).") from None
    lines, total = summarise_tools(rows, parts) if by == "tool" else summarise(rows, by)
    if args.json:
        print(json.dumps(_json(first, last, by, lines, total), indent=2))
    elif args.csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=[by, *FIELDS])
        writer.writeheader()
        writer.writerows({by: line.key, **_figures(line)} for line in lines)
    else:
        print(_text(first, last, by, lines, total))
    return 0


def _window(last: date, days: int) -> tuple[date, date]:
    """The days ending on `last`, from 0001-01-01 at the earliest: `--day
    0001-01-01` is a day like any other, and the calendar has none before it."""
    return window(last, min(days, (last - date.min).days + 1))


def _figures(line: Line) -> dict[str, Any]:
    return {
        "calls": line.calls,
        "input_tokens": line.input_tokens,
        "cache_read_tokens": line.cache_read_tokens,
        "cache_write_tokens": line.cache_write_tokens,
        "output_tokens": line.output_tokens,
        "cost_usd": plain(line.cost_usd),
        "unpriced_calls": line.unpriced,
        "floor_priced_calls": line.floor,
    }


def _json(first: date, last: date, by: By, lines: list[Line], total: Line) -> dict[str, Any]:
    return {
        "first_day": first.isoformat(),
        "last_day": last.isoformat(),
        "by": by,
        "groups": [{by: line.key, **_figures(line), "statuses": line.statuses} for line in lines],
        "total": {**_figures(total), "statuses": total.statuses},
    }


def _text(first: date, last: date, by: By, lines: list[Line], total: Line) -> str:
    span = (last - first).days + 1
    head = f"{first} to {last} (UTC, {span} day{'s' if span != 1 else ''}), by {by}: "
    out = [head + f"{call_count(total.calls)}, {usd(total.cost_usd)}" + _unknown(total)]
    width = max((len(line.key) for line in lines), default=0)
    for line in lines:
        cached = f" ({tokens(line.cache_read_tokens)} cached)" if line.cache_read_tokens else ""
        used = f"{tokens(line.input_tokens)} in{cached} · {tokens(line.output_tokens)} out"
        shown = f"  {line.key:<{width}}  {_amount(line):>9}  {call_count(line.calls)}  {used}"
        out.append(shown + _unknown(line))
    return "\n".join(out)


def _amount(line: Line) -> str:
    """A line's figure; `unpriced` where all it spent is not known (its
    calls at $0 are not free), as a day's listing says of such a call."""
    return UNPRICED if line.unpriced and not line.cost_usd else usd(line.cost_usd)


def _unknown(line: Line) -> str:
    """What a sum does not know: calls no price is known for are not free,
    and a call priced at a floor cost at least that."""
    return not_all_priced(line.unpriced, line.floor)
