"""What the ceilings above an agent's have spent today: the fleet's, each
group's and each tag's, calls in flight at their estimates. The gate, a
gateway call's admission, the snapshot and `/metrics` ask; the ledger's
own admission reads the same sums inside the transaction that writes a
call (`plane.money.budgets`).

With the store the plane's alone, the fleet's spend and what is in flight
are this plane's own sums in memory; with several planes on one store,
each is read from it (the others' calls are not in this plane's sums). A
group's and a tag's are always read: they are summed from the calls
written with them (`plane.money.budgets.GROUP_SPENT`). Each sum is added
up with the one adder of stored amounts (`plane.money.stored.sums_of`),
and a cost no plane wrote is the `LedgerError` naming its row, as the
start says it; the rows are read again by name only then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from sqlite3 import Row
from typing import TypeVar

from plane.errors import LedgerError
from plane.money.budgets import (
    FLEET_SPENT,
    GROUP_IN_FLIGHT,
    GROUP_SPENT,
    GROUPS_SPENT,
    TAG_IN_FLIGHT,
    TAG_SPENT,
)
from plane.money.ledger_rows import Recorded
from plane.money.stored import changed, sums_apart, sums_of, unreadable_day

K = TypeVar("K")

GROUP_SETTLED = "SELECT cost_usd FROM group_spend WHERE day = ? AND agent_group = ?"
"""A group's closed calls' sum on a day (`GROUP_SPENT` without its calls in flight)."""
FLEET_SETTLED = "SELECT cost_usd FROM spend WHERE day = ?"
"""Every agent's closed calls' sums on a day (`FLEET_SPENT` without the calls in flight)."""

Read = Callable[..., Awaitable[list[Row]]]
"""A read on the store (`Ledger._read`): SQL and its values, the rows."""


@dataclass(frozen=True)
class GroupsSpend:
    """Each group's day: what its closed calls spent (`spent`), what its
    calls in flight count at their estimates (`in_flight`), and the groups
    whose rows do not read, each with the sentence naming its row."""

    spent: dict[str, Decimal]
    in_flight: dict[str, Decimal]
    unread: dict[str, str]

    @classmethod
    def apart(
        cls, whole: dict[str, Decimal], in_flight: dict[str, Decimal], unread: dict[str, str]
    ) -> GroupsSpend:
        """From each group's whole day (calls in flight counted) and its
        calls in flight: a group whose rows do not read counts nothing."""
        flying = {g: in_flight.get(g, _ZERO) for g in whole}
        return cls({g: whole[g] - flying[g] for g in whole}, flying, unread)

    def whole(self, group: str) -> Decimal:
        """Its day as a shared ceiling's admission counts it, calls in flight at their estimates."""
        return self.spent.get(group, _ZERO) + self.in_flight.get(group, _ZERO)


class BudgetSpend:
    """What the fleet, a group and a tag have spent today (`Ledger.budget_spend`)."""

    def __init__(
        self,
        read: Read,
        today: Callable[[], Awaitable[date]],
        by_agent: Callable[[date], Awaitable[dict[str, Decimal]]],
        open_calls: Mapping[int, Recorded],
        plane: str | None,
    ) -> None:
        self._read = read
        self._today = today
        self._by_agent = by_agent
        """Each agent's spend on a day, from the ledger's sums in memory."""
        self._open = open_calls
        """The calls this plane opened and has not closed (the ledger's own)."""
        self.plane = plane
        """This plane's name when several share the store (None: it is its alone)."""

    async def fleet_today(self) -> Decimal:
        """Every agent's spend today together, calls in flight at their
        estimates. With several planes on the store, read from it (the
        others' calls are not in this plane's sums); else summed here."""
        day = await self._today()
        if self.plane is None:
            return sum((await self._by_agent(day)).values(), Decimal(0))
        on = day.isoformat()
        rows = await self._read(FLEET_SPENT, on, on)
        return await self._spent(rows, on, "spend", None)

    async def group_today(self, group: str) -> Decimal:
        """What the calls written with `group` spent today, those in flight
        at their estimates (`plane.money.budgets.GROUP_SPENT`): the group's
        agents when each call was made, whoever is in it now."""
        on = (await self._today()).isoformat()
        rows = await self._read(GROUP_SPENT, *(on, group) * 2)
        return await self._spent(rows, on, "group_spend", group)

    async def groups_today(self) -> GroupsSpend:
        """What every group that spent today spent (`group_settled`) and
        has in flight, in one read."""
        spend = await self.groups_spend()
        if spend.unread:
            raise LedgerError(next(iter(spend.unread.values())))
        return spend

    async def groups_spend(self) -> GroupsSpend:
        """`groups_today` of the groups whose rows read, and the groups whose
        rows do not, each with the sentence naming its row: those hold their
        own agents, the rest go on."""
        on = (await self._today()).isoformat()
        read = await self._read(GROUPS_SPENT, on, on)
        rows = [(str(group), cost) for group, cost, _ in read]
        flying = [(str(group), cost) for group, cost, in_flight in read if in_flight]
        sums = sums_of(rows)
        if sums is not None:
            return GroupsSpend.apart(sums, sums_of(flying) or {}, {})
        sums, apart = sums_apart(rows)
        unread = {}
        for group in apart:
            error = await unreadable_day(self._read, on, "group_spend", "", group)
            unread[group] = str(error) if error else changed("group_spend", on)
        in_flight, _ = sums_apart(flying)
        return GroupsSpend.apart(sums, in_flight, unread)

    async def _added(
        self,
        rows: Iterable[tuple[K, str]],
        on: str,
        table: str,
        in_flight: str = "",
        key: str | None = None,
    ) -> dict[K, Decimal]:
        """`rows` of day `on` (a key, a cost: `table`'s sums and the calls in
        flight `in_flight` picks, or those of `key` alone) added up by key. A
        cost no plane wrote is the LedgerError naming its row, said as at
        start; the rows are read again by name only then (`unreadable_day`),
        so each sum costs no more."""
        sums = sums_of(rows)
        if sums is None:
            error = await unreadable_day(self._read, on, table, in_flight, key)
            raise LedgerError(str(error) if error else changed(table, on))
        return sums

    async def _spent(self, rows: list[Row], on: str, table: str, key: str | None) -> Decimal:
        """`_added` of one budget's costs of day `on` (`table`'s sum of `key`,
        or of all, and its calls in flight): what the gate and a gateway
        call's hold read."""
        sums = await self._added((("", cost) for (cost,) in rows), on, table, key=key)
        return sums.get("", _ZERO)

    async def group_settled(self, group: str) -> Decimal:
        """What the group's closed calls spent today: `group_today` without
        its calls in flight, in one read (a call settling meanwhile is in
        one or the other, never in both)."""
        on = (await self._today()).isoformat()
        rows = await self._read(GROUP_SETTLED, on, group)
        return await self._spent(rows, on, "group_spend", group)

    async def fleet_settled(self) -> Decimal:
        """The same for every agent, on every plane: `fleet_today` without
        the calls in flight."""
        day = await self._today()
        if self.plane is None:  # both sums in memory, read at once
            spent = sum((await self._by_agent(day)).values(), Decimal(0))
            return spent - sum((r.cost_usd for r in self._open.values() if r.day == day), _ZERO)
        on = day.isoformat()
        rows = await self._read(FLEET_SETTLED, on)
        return await self._spent(rows, on, "spend", None)

    async def group_in_flight(self, group: str) -> Decimal:
        """The part of `group_today` its calls in flight count."""
        on = (await self._today()).isoformat()
        rows = await self._read(GROUP_IN_FLIGHT, on, group)
        return await self._spent(rows, on, "group_spend", group)

    async def tag_today(self, tag: str, day: date | None = None) -> Decimal:
        """What calls carrying `tag` spent today (or on the plane's `day`,
        read by the caller), those in flight at their estimates
        (`plane.money.budgets.TAG_SPENT`)."""
        on = (day or await self._today()).isoformat()
        rows = await self._read(TAG_SPENT, *(on, tag) * 2)
        return await self._spent(rows, on, "tag_spend", tag)

    async def tag_in_flight(self, tag: str, day: date | None = None) -> Decimal:
        """The part of `tag_today` its calls in flight count."""
        day = day or await self._today()
        if self.plane is None:
            return sum(
                (r.cost_usd for r in self._open.values() if r.tag == tag and r.day == day),
                Decimal(0),
            )
        on = day.isoformat()
        rows = await self._read(TAG_IN_FLIGHT, on, tag)
        return await self._spent(rows, on, "tag_spend", tag)


_ZERO = Decimal(0)
