"""The model's side of each conversation: the chat messages a turn sends.

Kept apart from `Conversation` (what people read) because the two differ:
the model sees tool calls and their full results, never the plane's notices
or cost lines; people see those, and short tool summaries. Compaction
rewrites this history and never the conversation.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from sqlite3 import Connection, Row

from plane.providers.base import ChatMessage, ToolCall
from plane.store.engine import Database
from plane.store.odd_rows import LeftAside

CACHE_CHARS = 32_000_000
"""The most history text kept in memory, over every agent (the one used
longest ago goes first): a turn reads its whole history, and most turns
follow one another on the same agents."""


class Transcript:
    def __init__(self, db: Database, *, only_writer: bool = False) -> None:
        """`only_writer`: no other plane writes this store (SQLite, whose home
        is locked), so what was read and written is kept to be read again."""
        self._db = db
        self._kept: OrderedDict[str, tuple[list[ChatMessage], int]] | None = (
            OrderedDict() if only_writer else None
        )
        """Per agent, its history and its size in characters, last used last."""
        self._left_aside = LeftAside("context")
        self._chars = 0
        self._writes = 0
        """Writes made or forgotten: a read overtaken by one is not kept."""

    async def load(self, agent: str) -> list[ChatMessage]:
        if self._kept is not None and agent in self._kept:
            self._kept.move_to_end(agent)
            return list(self._kept[agent][0])
        writes = self._writes
        rows = await self._db.fetchall(
            "SELECT id, role, content, tool_calls, tool_call_id, tool, mcp_server FROM context"
            " WHERE agent = ? ORDER BY id",
            agent,
        )
        history = self._readable(agent, rows)
        if writes == self._writes:
            self._keep(agent, list(history), _size(history))
        return history

    def _readable(self, agent: str, rows: list[Row]) -> list[ChatMessage]:
        """The history of `rows`; a row no plane writes (a store edited by
        hand: tool calls that are not their JSON) is left aside, and said in
        the log once: it would otherwise fail every turn of its agent."""
        history = []
        for row in rows:
            try:
                history.append(_chat_message(row))
            except (TypeError, ValueError) as error:
                self._left_aside(row["id"], agent, error)
        return history

    async def extend(self, agent: str, messages: list[ChatMessage]) -> None:
        rows = [_row(agent, m) for m in messages]
        await self._db.write(lambda conn: conn.executemany(INSERT, rows))
        self._writes += 1
        if self._kept is not None and agent in self._kept:
            history, size = self._kept[agent]
            self._keep(agent, history + messages, size + _size(messages))

    async def replace(self, agent: str, messages: list[ChatMessage]) -> None:
        """Swap the whole history (compaction), in one transaction."""
        rows = [_row(agent, m) for m in messages]

        def replace(conn: Connection) -> None:
            conn.execute("DELETE FROM context WHERE agent = ?", (agent,))
            conn.executemany(INSERT, rows)

        await self._db.write(replace)
        self._writes += 1
        self._keep(agent, list(messages), _size(messages))

    def forget(self, agent: str) -> None:
        """Its rows were changed elsewhere (a rename, a delete): read them again."""
        self._writes += 1
        self._keep(agent, [], -1)

    def _keep(self, agent: str, history: list[ChatMessage], size: int) -> None:
        """Keep `history` (size < 0: drop it), within `CACHE_CHARS` in all."""
        kept = self._kept
        if kept is None:
            return
        if agent in kept:
            self._chars -= kept.pop(agent)[1]
        if size < 0 or size > CACHE_CHARS:
            return
        kept[agent] = (history, size)
        self._chars += size
        while self._chars > CACHE_CHARS:
            self._chars -= kept.popitem(last=False)[1][1]


def _size(messages: list[ChatMessage]) -> int:
    return sum(len(m.content) + sum(len(c.arguments) for c in m.tool_calls) for m in messages)


INSERT = (
    "INSERT INTO context (agent, role, content, tool_calls, tool_call_id, tool, mcp_server)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def _row(agent: str, m: ChatMessage) -> tuple[str | None, ...]:
    calls = json.dumps([c.__dict__ for c in m.tool_calls]) if m.tool_calls else None
    return (agent, m.role, m.content, calls, m.tool_call_id, m.tool, m.mcp_server)


def _chat_message(row: Row) -> ChatMessage:
    calls = json.loads(row["tool_calls"] or "[]")
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        raise ValueError(f"tool_calls {row['tool_calls']!r} is not a list of calls")
    return ChatMessage(
        role=row["role"],
        content=row["content"],
        tool_calls=tuple(ToolCall(**c) for c in calls),
        tool_call_id=row["tool_call_id"],
        tool=row["tool"],
        mcp_server=row["mcp_server"],
    )
