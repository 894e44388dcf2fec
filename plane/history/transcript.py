"""The model's side of each conversation: the chat messages a turn sends.

Kept apart from `Conversation` (what people read) because the two differ:
the model sees tool calls and their full results, never the plane's notices
or cost lines; people see those, and short tool summaries. Compaction
rewrites this history and never the conversation.
"""

from __future__ import annotations

import json
from sqlite3 import Connection

from plane.db import Database
from plane.providers.base import ChatMessage, ToolCall


class Transcript:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def load(self, agent: str) -> list[ChatMessage]:
        rows = await self._db.fetchall(
            "SELECT role, content, tool_calls, tool_call_id FROM context"
            " WHERE agent = ? ORDER BY id",
            agent,
        )
        return [
            ChatMessage(
                role=row["role"],
                content=row["content"],
                tool_calls=tuple(ToolCall(**c) for c in json.loads(row["tool_calls"] or "[]")),
                tool_call_id=row["tool_call_id"],
            )
            for row in rows
        ]

    async def extend(self, agent: str, messages: list[ChatMessage]) -> None:
        rows = [_row(agent, m) for m in messages]
        await self._db.write(lambda conn: conn.executemany(INSERT, rows))

    async def replace(self, agent: str, messages: list[ChatMessage]) -> None:
        """Swap the whole history (compaction), in one transaction."""
        rows = [_row(agent, m) for m in messages]

        def replace(conn: Connection) -> None:
            conn.execute("DELETE FROM context WHERE agent = ?", (agent,))
            conn.executemany(INSERT, rows)

        await self._db.write(replace)


INSERT = (
    "INSERT INTO context (agent, role, content, tool_calls, tool_call_id) VALUES (?, ?, ?, ?, ?)"
)


def _row(agent: str, m: ChatMessage) -> tuple[str, str, str, str | None, str | None]:
    calls = json.dumps([c.__dict__ for c in m.tool_calls]) if m.tool_calls else None
    return (agent, m.role, m.content, calls, m.tool_call_id)
