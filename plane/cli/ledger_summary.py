"""`plane ledger --summary`: the ledger summed over the last days, by agent,
model, day, group, tag, session or tool, as text, JSON or CSV.

`--by tool` sums what each call's cost is attributed to (the README's
"Cost by tool"): its input's share of each tool's results, of its system
prompt and tool schemas `(prompt)`, of its messages `(messages)`, and its
answer `(answers)`; a call not split (in flight, cut, unpriced) counts
whole under `(unattributed)`. Its lines add up to the same total.

It reads the store itself, read-only, rather than asking the plane: the
ledger is the record, WAL lets it be read while a plane writes, and a
summary of last week is wanted most when no plane runs. The store is the
plane's: the PostgreSQL database several planes share when `PLANE_STORE`
(or agents.yaml's `store:`) names one, every plane's calls; else the SQLite
file in this machine's home. The plane's
day is found the way the ledger finds it (the later of the clock's and the
latest day the ledger reached), so "today" is the same day the plane says.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any, cast

from plane.cli.connect import remote
from plane.cli.daemon import config_path, load_config
from plane.clock import SystemClock, day_of
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
from plane.store import is_postgres
from plane.wire.words import UNPRICED, call_count, plain, tokens, usd

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
    with _ledger() as (conn, budgets):
        try:
            last = args.day or _plane_day(conn)
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


@contextmanager
def _ledger() -> Iterator[tuple[Any, bool]]:
    """The ledger to read, and whether it has the columns of groups and tags:
    the shared PostgreSQL store if the plane's is one (every plane keeps it
    up to date), else this machine's SQLite file."""
    store = os.environ.get("PLANE_STORE")
    if not store:
        path, looked = config_path(None)
        store = load_config(path, looked).store if path is not None else None
    if not store:
        with _open(Home.from_env().db) as conn:
            yield conn, _has_budgets(conn)
        return
    if not is_postgres(store):
        raise PlaneError(f"{store!r} is not a store the plane can use: give a postgresql:// URL.")
    conn = _open_shared(store)
    try:
        yield conn, True
    finally:
        conn.close()


def _open_shared(url: str) -> Any:
    """The shared store, read-only, one snapshot for the whole summary."""
    import psycopg

    from plane.store.postgres_dialect import Connection, first_line
    from plane.store.postgres_links import connect

    try:
        pg = connect(url)
        pg.autocommit = False
        pg.read_only = True
        pg.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    except psycopg.Error as error:
        raise PlaneError(f"Cannot read the shared store's ledger ({first_line(error)}).") from None
    return Connection(pg)


def _has_budgets(conn: sqlite3.Connection) -> bool:
    """The file has the columns of groups and tags (a plane of this version
    has run on it, and brought it up to date)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(calls)")}
    return "agent_group" in columns


def _window(last: date, days: int) -> tuple[date, date]:
    """The days ending on `last`, from 0001-01-01 at the earliest: `--day
    0001-01-01` is a day like any other, and the calendar has none before it."""
    return window(last, min(days, (last - date.min).days + 1))


class _Closing(sqlite3.Connection):
    """A connection that closes when its `with` ends (sqlite3's own only commits)."""

    def __exit__(self, *exc: object) -> None:  # type: ignore[override]
        self.close()


def _open(path: Path) -> _Closing:
    if not path.is_file():
        raise PlaneError(f"No ledger at {path} yet: no plane has run in {path.parent}.")
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, factory=_Closing)
        conn.row_factory = sqlite3.Row
        conn.execute("SELECT 1 FROM calls LIMIT 1")
    except sqlite3.Error as error:
        raise PlaneError(f"Cannot read the ledger {path} ({error}).") from None
    return conn


def _plane_day(conn: sqlite3.Connection) -> date:
    """The later of the clock's day and the latest the ledger reached, as the
    ledger's `today()` (a clock that moved back does not move the day back)."""
    try:
        (latest,) = conn.execute(
            "SELECT MAX(day) FROM (SELECT MAX(day) AS day FROM calls"
            " UNION ALL SELECT day FROM plane_day) AS days"
        ).fetchone()
    except sqlite3.OperationalError:  # a ledger file from before the plane kept its day
        (latest,) = conn.execute("SELECT MAX(day) FROM calls").fetchone()
    clock_day = day_of(SystemClock().now())
    return clock_day if latest is None else max(clock_day, date.fromisoformat(latest))


def _figures(line: Line) -> dict[str, Any]:
    return {
        "calls": line.calls,
        "input_tokens": line.input_tokens,
        "cache_read_tokens": line.cache_read_tokens,
        "cache_write_tokens": line.cache_write_tokens,
        "output_tokens": line.output_tokens,
        "cost_usd": plain(line.cost_usd),
        "unpriced_calls": line.unpriced,
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
    out = [head + f"{call_count(total.calls)}, {usd(total.cost_usd)}" + _unpriced(total)]
    width = max((len(line.key) for line in lines), default=0)
    for line in lines:
        cached = f" ({tokens(line.cache_read_tokens)} cached)" if line.cache_read_tokens else ""
        used = f"{tokens(line.input_tokens)} in{cached} · {tokens(line.output_tokens)} out"
        shown = f"  {line.key:<{width}}  {usd(line.cost_usd):>9}  {call_count(line.calls)}  {used}"
        out.append(shown + _unpriced(line))
    return "\n".join(out)


def _unpriced(line: Line) -> str:
    """What a sum leaves out: calls no price is known for are not free."""
    return f" ({line.unpriced} {UNPRICED}, not in the total)" if line.unpriced else ""
