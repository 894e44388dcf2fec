"""Each agent's conversation as people read it: what the operator typed,
what the agent answered, what the plane said, what each turn cost.

Every message is committed when it arrives, before anything is said about
it, so nothing anyone typed is lost — least of all what arrives while the
agent is held. An operator's message stays *waiting* until a turn has
answered it.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from decimal import Decimal
from sqlite3 import Connection, Row

from plane.clock import Clock, day_of
from plane.db import Database
from plane.wire.protocol import Message, MessageKind, Usage


class Conversation:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

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
    ) -> Message:
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
        )
        message_id = await self._db.write(
            lambda conn: (
                conn.execute(
                    "INSERT INTO messages (agent, at, kind, text, held, waiting, cost_usd, usage)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                ).lastrowid
            )
        )
        assert message_id is not None
        return Message(
            id=message_id,
            agent=agent,
            at=at,
            kind=kind,
            text=text,
            held=held,
            cost_usd=cost_usd,
            usage=usage,
        )

    async def history(
        self, agent: str, limit: int = 200, *, before_id: int | None = None
    ) -> list[Message]:
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
        return [_message(row) for row in rows]

    async def waiting(self, agent: str) -> list[Message]:
        rows = await self._db.fetchall(
            "SELECT * FROM messages WHERE agent = ? AND waiting = 1 ORDER BY id", agent
        )
        return [_message(row) for row in rows]

    async def count_waiting(self, agent: str) -> int:
        row = await self._db.fetchone(
            "SELECT COUNT(*) FROM messages WHERE agent = ? AND waiting = 1", agent
        )
        return int(row[0]) if row else 0

    async def answered(self, ids: list[int]) -> None:
        if ids:
            await self._db.write(lambda conn: _mark_answered(conn, ids))

    async def answer(self, agent: str, text: str, questions: list[int]) -> Message:
        """The agent's answer, and the messages it answers no longer waiting,
        in one commit: a plane killed in between neither loses the answer of
        a question marked answered, nor the question of one not."""

        def answer(conn: Connection) -> Message:
            message = self.append_within(conn, agent, "agent", text)
            _mark_answered(conn, questions)
            return message

        return await self._db.write(answer)

    def append_within(
        self,
        conn: Connection,
        agent: str,
        kind: MessageKind,
        text: str,
        *,
        cost_usd: Decimal | None = None,
    ) -> Message:
        """`append`, as part of a write function (`Database.write`): the
        message is committed with the rest of it, or not at all."""
        at = self._clock.now()
        cursor = conn.execute(
            "INSERT INTO messages (agent, at, kind, text, cost_usd) VALUES (?, ?, ?, ?, ?)",
            (agent, at.isoformat(), kind, text, None if cost_usd is None else str(cost_usd)),
        )
        assert cursor.lastrowid is not None
        return Message(
            id=cursor.lastrowid, agent=agent, at=at, kind=kind, text=text, cost_usd=cost_usd
        )

    def waiting_within(self, conn: Connection, agent: str) -> int:
        """How many of `agent`'s messages wait for an answer, read inside a
        write function."""
        row = conn.execute(
            "SELECT COUNT(*) FROM messages WHERE agent = ? AND waiting = 1", (agent,)
        ).fetchone()
        return int(row[0]) if row else 0

    async def first_today(self, agent: str, kind: str, day: date | None = None) -> bool:
        """True the first time it is asked for (agent, kind) on `day` (the
        plane's day, which the ledger keeps; the clock's by default): for
        notices said once a day, across restarts too."""
        key = (agent, (day or day_of(self._clock.now())).isoformat(), kind)
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


def _mark_answered(conn: Connection, ids: list[int]) -> None:
    if ids:
        marks = ",".join("?" * len(ids))
        conn.execute(f"UPDATE messages SET waiting = 0 WHERE id IN ({marks})", ids)


def _message(row: Row) -> Message:
    return Message(
        id=row["id"],
        agent=row["agent"],
        at=datetime.fromisoformat(row["at"]),
        kind=row["kind"],
        text=row["text"],
        held=bool(row["held"]),
        cost_usd=None if row["cost_usd"] is None else Decimal(row["cost_usd"]),
        usage=None if row["usage"] is None else Usage(**json.loads(row["usage"])),
    )
