"""The day's sums a ledger transaction moves: the `spend` rows (each agent's
sum per day of its calls no longer pending), and the `group_spend` and
`tag_spend` rows of calls written with a group or a tag, added up as the
transaction's write functions run and written once at its end
(`Database.finish_with`): one row per agent per batch, not one per call.
A read of `spend` inside the transaction has the agents' written first
(`write_now`), to see what the functions before it moved."""

from __future__ import annotations

from collections.abc import Collection
from datetime import date
from decimal import Decimal
from sqlite3 import Connection

from plane.money import stored

_ZERO = Decimal(0)


def _adding(table: str, column: str) -> str:
    """An amount added to `table`'s sum of a day and a `column` (made if new)."""
    return (
        f"INSERT INTO {table} (day, {column}, cost_usd) VALUES (?, ?, ?)"
        f" ON CONFLICT (day, {column}) DO UPDATE SET"
        f" cost_usd = decimal_add({table}.cost_usd, excluded.cost_usd)"
    )


_ADD_SPEND = (
    "INSERT INTO spend (day, agent, cost_usd) VALUES (?, ?, ?) ON CONFLICT (day, agent)"
    " DO UPDATE SET cost_usd = CASE WHEN spend.cost_usd = ? THEN ?"
    " ELSE decimal_add(spend.cost_usd, excluded.cost_usd) END"
)
"""An agent's amount added to its day's row (made if new), as `_adding`'s;
and when the row holds the sum the writer last knew it to hold (the fourth
value), set to that sum plus the amount, added in Python (the fifth): the
same text `decimal_add` makes, without SQLite calling back into Python for
each row (~8k instructions a settled call). A row that holds anything else
(another plane's write, a sweep, a sum not known) is added to by
`decimal_add`: exact whatever the writer believed."""

_HELD = "SELECT cost_usd FROM spend WHERE day = ? AND agent = ?"
_ADD_GROUP_SPEND = _adding("group_spend", "agent_group")
_ADD_TAG_SPEND = _adding("tag_spend", "tag")


class DaySums:
    """The `spend` rows a transaction moves (and the `group_spend` and
    `tag_spend` rows of calls written with a group, a tag), added up as its
    functions run and written once at its end: one row per agent per batch,
    not one per call. Used only on the database's writer thread."""

    def __init__(self) -> None:
        self._moved: dict[tuple[str, str], Decimal] = {}
        self._groups: dict[tuple[str, str], Decimal] = {}
        self._tags: dict[tuple[str, str], Decimal] = {}
        self._held: dict[str, dict[str, tuple[str | None, Decimal]]] = {}
        """By day, then agent: what the `spend` row held (its text, None for
        no row, and its sum) after this writer's last transaction that read
        or wrote it, for `_ADD_SPEND`'s fourth and fifth values."""
        self._touched: list[tuple[str, str]] = []
        """The rows read or written by the last transaction that wrote sums
        (`write`, `write_now`): not known to hold that once it fails."""
        self._ended = True
        """`_touched` is of a transaction whose `write` ran: by the time the
        next one writes sums, it committed (else `forget` emptied it), and
        its rows are forgotten there."""
        self.stale = False
        """Set from any thread when the rows may have moved under this
        writer (`Ledger.forget_sums`): what it held is read again."""

    def add(
        self,
        day: date,
        agent: str,
        amount: Decimal,
        group: str | None = None,
        tag: str | None = None,
    ) -> None:
        self.add_on(day.isoformat(), agent, amount, group, tag)

    def add_on(
        self,
        day: str,
        agent: str,
        amount: Decimal,
        group: str | None = None,
        tag: str | None = None,
    ) -> None:
        """`add`, the day already as the table writes it."""
        key = (day, agent)
        self._moved[key] = self._moved.get(key, _ZERO) + amount
        if group is not None:
            key = (day, group)
            self._groups[key] = self._groups.get(key, _ZERO) + amount
        if tag is not None:
            key = (day, tag)
            self._tags[key] = self._tags.get(key, _ZERO) + amount

    def on_group(self, day: date, group: str) -> Decimal:
        """What this transaction moved so far on `day` of `group`'s calls."""
        return self._groups.get((day.isoformat(), group), _ZERO)

    def on_tag(self, day: date, tag: str) -> Decimal:
        """What this transaction moved so far on `day` of the calls carrying `tag`."""
        return self._tags.get((day.isoformat(), tag), _ZERO)

    def on(self, day: date, agents: Collection[str] | None = None) -> Decimal:
        """What this transaction moved so far on `day`, of `agents` (None: all)."""
        key = day.isoformat()
        moved = (v for (d, a), v in self._moved.items() if d == key)
        if agents is not None:
            moved = (v for (d, a), v in self._moved.items() if d == key and a in agents)
        return sum(moved, Decimal(0))

    def write(self, conn: Connection) -> None:
        """Each sum moved, exactly (`decimal_add`, the writer's own function:
        SQLite's + would add floats; an agent's, added here when its row is
        as the writer last knew it: `_ADD_SPEND`). A group's and a tag's rows, which
        several planes write, go in their keys' order: two planes' batches
        lock them in one order, and never wait on each other in a cycle (an
        agent's is written by the one plane that runs it)."""
        self.write_now(conn)
        self._ended = True
        for sums, sql in ((self._groups, _ADD_GROUP_SPEND), (self._tags, _ADD_TAG_SPEND)):
            if sums:
                moved = sorted(sums.items())
                conn.executemany(sql, [(day, key, str(amount)) for (day, key), amount in moved])
                sums.clear()

    def write_now(self, conn: Connection) -> None:
        """The agents' sums moved so far, written before the transaction's
        end: for a read of `spend` inside it (a day's sums read, `DaySpend`),
        which would otherwise see neither a close's cost (not written yet)
        nor its estimate (no longer pending). A group's and a tag's wait
        for `write`, where they are locked in their keys' order."""
        if self._ended:  # the transaction before committed: what it left is held
            self._touched.clear()
            self._ended = False
        if self._moved:
            conn.executemany(_ADD_SPEND, self._added(conn))
            self._moved.clear()

    def _added(self, conn: Connection) -> list[tuple[str, str, str, str | None, str]]:
        """`_ADD_SPEND`'s values for each agent's amount moved, and the sums
        its rows then hold, kept (a row not known yet is read once)."""
        if self.stale:
            self.stale = False
            self._held.clear()
        rows: list[tuple[str, str, str, str | None, str]] = []
        self._touched.extend(self._moved)
        for (day, agent), amount in self._moved.items():
            held = self._held.get(day)
            if held is None:
                if len(self._held) > 1:  # days before yesterday: no close comes for them
                    del self._held[min(self._held)]
                held = self._held[day] = {}
            known = held.get(agent)
            if known is None:
                found = conn.execute(_HELD, (day, agent)).fetchone()
                known = (None, _ZERO) if found is None else _read_sum(day, agent, found[0])
            text = str(amount)
            if known[0] is None:  # no row: the amount is the row
                rows.append((day, agent, text, None, text))
                held[agent] = (text, amount)
            else:
                total = known[1] + amount
                rows.append((day, agent, text, known[0], added := str(total)))
                held[agent] = (added, total)
        return rows

    def forget(self) -> None:
        self._moved.clear()
        self._groups.clear()
        self._tags.clear()
        for day, agent in self._touched:
            self._held.get(day, {}).pop(agent, None)
        self._touched.clear()
        self._ended = True


def _read_sum(day: str, agent: str, text: str) -> tuple[str, Decimal]:
    """A `spend` row's text and sum (StoreError, the start's sentence, if it
    is no amount: a row edited while the plane runs)."""
    return text, stored.amount("spend", f"{agent} on {day}", "cost_usd", text)
