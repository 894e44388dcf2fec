"""Each agent's conversation as people read it: what the operator typed,
what the agent answered, what the plane said, what each turn cost.

Every message is committed when it arrives, before anything is said about
it, so nothing anyone typed is lost — least of all what arrives while the
agent is held. An operator's message stays *waiting* until a turn has
answered it.

**How many wait, per agent, is kept in memory** where this plane is the
store's only writer: read once (on the writer, between two commits), then
moved by each write that changes it, once it has committed
(`Database.write`'s `then`), so a row update or a snapshot reads no table.
A write that fails moves nothing. With several planes on one store
(`shared`), the others write too: the counts are read each time, all
agents in one query. A count is of the waiting messages a turn can read: a
row no plane writes is left aside (`_readable`) and not counted, else its
agent would show it waiting for ever, for a turn that never takes it.

**Reads by agent are made together**: the waiting messages and told holds
that a fleet's workers ask for at once (at start) are one query for all of
them (`plane.batched`), and an agent with nothing waiting reads nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from sqlite3 import Connection, Row

from plane.batched import Batched, Shared, agents_in
from plane.clock import Clock, day_of
from plane.store.engine import Database
from plane.store.odd_rows import LeftAside
from plane.wire.protocol import ConversationMessage, MessageKind, Usage

_WAITING = "SELECT * FROM messages WHERE waiting = 1"


@dataclass(frozen=True)
class CostLine:
    """A turn's quiet cost line, written with the turn's end (`end_turn`).
    `failed`: the turn failed (`ConversationMessage.failed`)."""

    text: str
    cost_usd: Decimal | None
    usage: Usage
    failed: bool


class Conversation:
    def __init__(self, db: Database, clock: Clock, *, shared: bool = False) -> None:
        self._db = db
        self._clock = clock
        self._shared = shared
        self._waiting: dict[str, int] | None = None
        """Each agent's waiting messages (None: not read yet; never kept when shared)."""
        self._counting = Shared(self._read_counts)
        self._waiting_of: Batched[str, list[ConversationMessage]] = Batched(
            self._read_waiting, missing=[]
        )
        self._told_of: Batched[str, str | None] = Batched(self._read_told, missing=None)
        self._left_aside = LeftAside("messages")
        self._untold: dict[tuple[str, str, str], int] = {}
        """(agent, day, kind) known not told on `_untold_on` (`forget_today`),
        and the count of ceiling changes it was known at: an agent's every
        call below its fallback's ratio writes nothing until a ceiling moves
        (on any plane: one told on another is heard here, and moves it)."""
        self._untold_on = ""

    async def append(
        self,
        agent: str,
        kind: MessageKind,
        text: str,
        *,
        held: bool = False,
        waiting: bool = False,
        cost_usd: Decimal | None = None,
        usage: Usage | None = None,
        failed: bool = False,
    ) -> ConversationMessage:
        """`failed`: a cost line's turn failed (`ConversationMessage.failed`)."""
        at = self._clock.now()
        row = (
            agent,
            at.isoformat(),
            kind,
            text,
            int(held),
            int(waiting),
            None if cost_usd is None else str(cost_usd),
            None if usage is None else usage.model_dump_json(),
            int(failed),
        )
        message_id = await self._db.write(
            lambda conn: (
                conn.execute(
                    "INSERT INTO messages"
                    " (agent, at, kind, text, held, waiting, cost_usd, usage, failed)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                ).lastrowid
            ),
            then=(lambda _: self._move({agent: 1})) if waiting else None,
        )
        assert message_id is not None
        return ConversationMessage(
            id=message_id,
            agent=agent,
            at=at,
            kind=kind,
            text=text,
            held=held,
            cost_usd=cost_usd,
            usage=usage,
            failed=failed,
        )

    async def history(
        self, agent: str, limit: int = 200, *, before_id: int | None = None
    ) -> list[ConversationMessage]:
        """The newest `limit` messages, oldest first; with `before_id`, the
        `limit` just before that message, so a reader pages back by passing
        the oldest id it holds, with no gap and no message twice. Both walk
        the `messages_by_agent (agent, id)` index backwards."""
        params: tuple[str | int, ...]
        if before_id is None:
            below, params = "", (agent, limit)
        else:
            below, params = " AND id < ?", (agent, before_id, limit)
        rows = await self._db.fetchall(
            f"SELECT * FROM (SELECT * FROM messages WHERE agent = ?{below}"
            " ORDER BY id DESC LIMIT ?) AS page ORDER BY id",
            *params,
        )
        return self._readable(rows)

    async def after(self, last: int, limit: int) -> list[ConversationMessage]:
        """Up to `limit` messages of any agent after the one whose id is
        `last`, oldest first (what the other planes of a fleet said)."""
        rows = await self._db.fetchall(
            "SELECT * FROM messages WHERE id > ? ORDER BY id LIMIT ?", last, limit
        )
        return self._readable(rows)

    async def last_id(self) -> int:
        """The newest message's id, of any agent (0: none yet)."""
        rows = await self._db.fetchall("SELECT MAX(id) FROM messages")
        return int(rows[0][0] or 0) if rows else 0

    async def waiting(self, agent: str) -> list[ConversationMessage]:
        if not self._shared and agent not in await self._counts():
            return []
        return list(await self._waiting_of.get(agent))

    async def _read_waiting(self, agents: list[str]) -> dict[str, list[ConversationMessage]]:
        narrow, params = agents_in(agents)
        rows = await self._db.fetchall(
            f"SELECT * FROM messages WHERE waiting = 1 AND {narrow} ORDER BY id", *params
        )
        found: dict[str, list[ConversationMessage]] = {}
        for message in self._readable(rows):
            found.setdefault(message.agent, []).append(message)
        return found

    def _readable(self, rows: list[Row]) -> list[ConversationMessage]:
        """The messages of `rows`; a row no plane writes (a store edited by
        hand: a time that is none, a cost that is no amount, usage that is not
        its JSON) is left aside, and said in the log once: it would otherwise
        fail every read of its agent's conversation."""
        messages = []
        for row in rows:
            try:
                messages.append(_message(row))
            except (TypeError, ValueError, ArithmeticError) as error:
                self._left_aside(row["id"], row["agent"], error)
        return messages

    async def count_waiting(self, agent: str) -> int:
        if self._shared:
            rows = await self._db.fetchall(_WAITING + " AND agent = ?", agent)
            return self._counted(rows).get(agent, 0)
        return (await self._counts()).get(agent, 0)

    async def waiting_counts(self) -> dict[str, int]:
        """Every agent's count of waiting messages (an agent with none is
        left out): from memory, or one query when shared."""
        if self._shared:
            return self._counted(await self._db.fetchall(_WAITING))
        return dict(await self._counts())

    def _counted(self, rows: list[Row]) -> dict[str, int]:
        """How many of `rows`, waiting messages, each agent has that a turn
        can read (the waiting rows are few: a turn reads them all anyway)."""
        counts: dict[str, int] = {}
        for message in self._readable(rows):
            counts[message.agent] = counts.get(message.agent, 0) + 1
        return counts

    async def _counts(self) -> dict[str, int]:
        while self._waiting is None:
            await self._counting.get()
        return self._waiting

    async def _read_counts(self) -> None:
        def read(conn: Connection) -> list[Row]:
            return list(conn.execute(_WAITING).fetchall())

        def keep(rows: list[Row]) -> None:
            if self._waiting is None:  # another read may have been kept first
                self._waiting = self._counted(rows)

        await self._db.write(read, then=keep)

    def _move(self, by: dict[str, int]) -> None:
        """After a commit that changed waiting counts by `by`."""
        if self._waiting is None:
            return  # read later, from the table, which holds the change
        for agent, n in by.items():
            left = self._waiting.get(agent, 0) + n
            if left:
                self._waiting[agent] = left
            else:
                self._waiting.pop(agent, None)

    def closed(self, agent: str) -> None:
        """After the commit that closed all of `agent`'s waiting messages."""
        if self._waiting is not None:
            self._waiting.pop(agent, None)

    def renamed(self, old: str, new: str) -> None:
        """After the commit that moved `old`'s messages to `new`."""
        if self._waiting is not None and old in self._waiting:
            self._waiting[new] = self._waiting.get(new, 0) + self._waiting.pop(old)

    async def end_turn(
        self, agent: str, answer: str, questions: list[int], cost: CostLine | None
    ) -> list[ConversationMessage]:
        """A turn's end, in one commit: its answer (if it gave one), the
        messages it answered no longer waiting, and its cost line (if it has
        one); returns the lines written. A plane killed in between neither
        loses the answer of a question marked answered, nor the question of
        one not, nor the cost line of a turn answered. And a plane of the
        fleet that reads the question answered reads the whole turn with it:
        `plane send --wait` through that plane ends there, and prints the
        cost line, and exits 1 if the line says the turn failed."""
        if not (answer or questions or cost):
            return []

        def end(conn: Connection) -> tuple[list[ConversationMessage], dict[str, int]]:
            said = [self.append_within(conn, agent, "agent", answer)] if answer else []
            moved = _mark_answered(conn, questions)
            if cost is not None:
                said.append(
                    self.append_within(
                        conn,
                        agent,
                        "cost",
                        cost.text,
                        cost_usd=cost.cost_usd,
                        usage=cost.usage,
                        failed=cost.failed,
                    )
                )
            return said, moved

        said, _ = await self._db.write(end, then=lambda done: self._move(done[1]))
        return said

    def append_within(
        self,
        conn: Connection,
        agent: str,
        kind: MessageKind,
        text: str,
        *,
        cost_usd: Decimal | None = None,
        usage: Usage | None = None,
        failed: bool = False,
    ) -> ConversationMessage:
        """`append`, as part of a write function (`Database.write`): the
        message is committed with the rest of it, or not at all."""
        at = self._clock.now()
        cursor = conn.execute(
            "INSERT INTO messages (agent, at, kind, text, cost_usd, usage, failed)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                agent,
                at.isoformat(),
                kind,
                text,
                None if cost_usd is None else str(cost_usd),
                None if usage is None else usage.model_dump_json(),
                int(failed),
            ),
        )
        assert cursor.lastrowid is not None
        return ConversationMessage(
            id=cursor.lastrowid,
            agent=agent,
            at=at,
            kind=kind,
            text=text,
            cost_usd=cost_usd,
            usage=usage,
            failed=failed,
        )

    def waiting_within(self, conn: Connection, agent: str) -> int:
        """How many of `agent`'s messages wait for an answer (that a turn
        can read), read inside a write function."""
        rows = conn.execute(_WAITING + " AND agent = ?", (agent,)).fetchall()
        return self._counted(rows).get(agent, 0)

    async def first_today(self, agent: str, kind: str, day: date | None = None) -> bool:
        """True the first time it is asked for (agent, kind) on `day` (the
        plane's day, which the ledger keeps; the clock's by default): for
        notices said once a day, across restarts too."""
        key = (agent, (day or day_of(self._clock.now())).isoformat(), kind)
        self._untold.pop(key, None)
        added: int = await self._db.write(
            lambda conn: (
                conn.execute(
                    "INSERT INTO notices (agent, day, kind) VALUES (?, ?, ?)"
                    " ON CONFLICT DO NOTHING",
                    key,
                ).rowcount
            )
        )
        return added == 1

    async def forget_today(self, agent: str, kind: str, day: date, changes: int) -> bool:
        """True if (agent, kind) was told on `day` (`first_today`), which is
        forgotten now: a notice said once per change, not once a day, is said
        again at the next change (a fallback left and later taken again).
        `changes`: the ceilings' count of changes. Leaving a fallback the
        same day takes a ceiling raised or removed (spend only grows), so
        once known untold, it is asked of the store again only after a
        ceiling moved, on this plane or any other (several share the
        notices: another may have told it meanwhile, at an older ceiling)."""
        key = (agent, day.isoformat(), kind)
        if self._untold.get(key) == changes:
            return False
        if self._untold_on != key[1]:  # a day gone by is never asked of again
            self._untold, self._untold_on = {}, key[1]
        self._untold[key] = changes  # before the write: a `first_today` meanwhile drops it
        removed: int = await self._db.write(
            lambda conn: (
                conn.execute(
                    "DELETE FROM notices WHERE agent = ? AND day = ? AND kind = ?", key
                ).rowcount
            )
        )
        return removed == 1

    async def told_hold(self, agent: str) -> str | None:
        """The reason of the hold `agent` was last told of and is still in."""
        return await self._told_of.get(agent)

    async def told_holds(self) -> set[str]:
        """Every agent whose conversation was told of a hold it is still in,
        in one query (a start looks first at these, `Crew.start`)."""
        return {agent for (agent,) in await self._db.fetchall("SELECT agent FROM holds_told")}

    async def _read_told(self, agents: list[str]) -> dict[str, str | None]:
        narrow, params = agents_in(agents)
        rows = await self._db.fetchall(
            f"SELECT agent, reason FROM holds_told WHERE {narrow}", *params
        )
        return {agent: str(reason) for agent, reason in rows}

    async def remember_hold(self, agent: str, reason: str | None) -> None:
        """`agent` was told of a hold for `reason` (None: its hold ended)."""

        def write(conn: Connection) -> None:
            if reason is None:
                conn.execute("DELETE FROM holds_told WHERE agent = ?", (agent,))
            else:
                conn.execute(
                    "INSERT INTO holds_told (agent, reason) VALUES (?, ?)"
                    " ON CONFLICT (agent) DO UPDATE SET reason = excluded.reason",
                    (agent, reason),
                )

        await self._db.write(write)


def _mark_answered(conn: Connection, ids: list[int]) -> dict[str, int]:
    """No longer waiting; returns how each agent's waiting count moved."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    where = f"FROM messages WHERE id IN ({marks}) AND waiting = 1"
    moved = {
        agent: -int(n)
        for agent, n in conn.execute(f"SELECT agent, COUNT(*) {where} GROUP BY agent", ids)
    }
    conn.execute(f"UPDATE messages SET waiting = 0 WHERE id IN ({marks}) AND waiting = 1", ids)
    return moved


def _message(row: Row) -> ConversationMessage:
    return ConversationMessage(
        id=row["id"],
        agent=row["agent"],
        at=datetime.fromisoformat(row["at"]),
        kind=row["kind"],
        text=row["text"],
        held=bool(row["held"]),
        cost_usd=None if row["cost_usd"] is None else Decimal(row["cost_usd"]),
        usage=None if row["usage"] is None else Usage(**json.loads(row["usage"])),
        failed=bool(row["failed"]),
    )
