"""Groups of agents and their ceilings: the file's (`groups:` in
agents.yaml), and the operator's, set with `/limit group NAME …` and kept
in `group_limits`, which replace the file's — "off" included, as for the
fleet (a ceiling someone removed does not come back with a restart). A
group removed from the file loses the operator's value, as a deleted
agent loses its ceiling (`Groups.drop_removed`).

Only the operator sets a group's ceiling: an agent may tighten its own
ceiling, never another's, and a group's is every member's.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from decimal import Decimal
from sqlite3 import Connection, Row

from plane.clock import Clock
from plane.money.budgets import Budget
from plane.money.ledger import Ledger
from plane.money.stored import amount_or_none
from plane.store.engine import Database
from plane.wire.protocol import GroupState
from plane.wire.words import usd

log = logging.getLogger(__name__)


class Groups:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        self._from_file: dict[str, Decimal | None] = {}
        self._members: dict[str, frozenset[str]] = {}
        self._of: dict[str, str] = {}
        self._set: dict[str, Decimal | None] = {}
        """The operator's values (None inside is "off")."""

    def load(self, groups: Mapping[str, tuple[Decimal | None, frozenset[str]]]) -> None:
        """The file's groups: each one's ceiling and agents."""
        self._from_file = {name: limit for name, (limit, _) in groups.items()}
        self._members = {name: members for name, (_, members) in groups.items()}
        self._of = {agent: name for name, members in self._members.items() for agent in members}

    async def drop_removed(self) -> None:
        """Forget the operator's value of each group the file no longer has,
        as a deleted agent's ceiling goes: a group made again later under
        its name starts from the file's ceiling, not from a value (or an
        "off") set for the one removed. Each said in the log."""
        rows = await self._db.fetchall("SELECT name, limit_usd FROM group_limits")
        gone = [(r["name"], _limit(r)) for r in rows if r["name"] not in self._members]
        if not gone:
            return
        names = [(name,) for name, _ in gone]
        await self._db.write(
            lambda conn: conn.executemany("DELETE FROM group_limits WHERE name = ?", names)
        )
        for name, limit in gone:
            value = "off" if limit is None else f"{usd(limit)} a day"
            log.info(
                "group %s is no longer in agents.yaml: its /limit group value (%s) is dropped",
                name,
                value,
            )

    async def read(self, db: Database | None = None) -> dict[str, Decimal | None]:
        """The operator's values as stored (another plane may have set one),
        for `reread`; read through `db` when given (`Ceilings.reload`)."""
        rows = await (db or self._db).fetchall("SELECT name, limit_usd FROM group_limits")
        return {r["name"]: _limit(r) for r in rows}

    def reread(self, found: dict[str, Decimal | None]) -> frozenset[str]:
        """The operator's values as `read` found them; the groups whose
        ceiling changed."""
        if found == self._set:
            return frozenset()
        before = {name: self.ceiling(name) for name in self._set.keys() | found.keys()}
        self._set = found
        return frozenset(name for name, ceiling in before.items() if self.ceiling(name) != ceiling)

    def names(self) -> list[str]:
        return list(self._members)

    def exists(self, name: str) -> bool:
        return name in self._members

    def of(self, agent: str) -> str | None:
        """The group `agent` is in (None: none)."""
        return self._of.get(agent)

    def members(self, name: str) -> frozenset[str]:
        return self._members.get(name, frozenset())

    def ceiling(self, name: str) -> Decimal | None:
        """The operator's value when there is one (off included), else the file's."""
        if name in self._set:
            return self._set[name]
        return self._from_file.get(name)

    def source(self, name: str) -> str:
        """Where the ceiling comes from: "/limit", "file" or "none"."""
        if name in self._set:
            return "/limit" if self._set[name] is not None else "none"
        return "file" if self._from_file.get(name) is not None else "none"

    def budget(self, agent: str) -> Budget | None:
        """What admitting a call of `agent`'s checks of its group (None: in none)."""
        name = self._of.get(agent)
        if name is None:
            return None
        return Budget(name, self.ceiling(name))

    async def states(self, ledger: Ledger) -> tuple[list[GroupState], dict[str, str]]:
        """Every group as a snapshot carries it, and the groups whose spend
        today does not read, each with the sentence naming its row (shown as
        spending nothing: their agents' rows say they are held)."""
        if not self._members:
            return [], {}
        spend = await ledger.budget_spend.groups_spend()
        return [
            GroupState(
                name=name,
                spend_today_usd=spend.spent.get(name, Decimal(0)),
                limit_usd=self.ceiling(name),
                agents=sorted(members),
                in_flight_usd=spend.in_flight.get(name, Decimal(0)),
            )
            for name, members in self._members.items()
        ], spend.unread

    async def set(self, name: str, ceiling: Decimal | None) -> None:
        """The operator's value, from the keyboard: it replaces the file's."""
        row = (name, None if ceiling is None else str(ceiling), self._clock.now().isoformat())

        def set_limit(conn: Connection) -> None:
            conn.execute(
                "INSERT INTO group_limits (name, limit_usd, set_at, set_by)"
                " VALUES (?, ?, ?, 'operator') ON CONFLICT (name) DO UPDATE SET"
                " limit_usd = excluded.limit_usd, set_at = excluded.set_at",
                row,
            )

        await self._db.write(set_limit)
        self._set[name] = ceiling


def _limit(row: Row) -> Decimal | None:
    """A group's value as the operator set it; one no plane writes stops the start."""
    return amount_or_none("group_limits", row["name"], "limit_usd", row["limit_usd"])
