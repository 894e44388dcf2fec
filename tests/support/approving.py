"""One-tap approval in tests: a real plane with its `--http` listener and
alerts to a real local receiver; an agent held at its ceiling; the links its
alert carried; and what a refusal must leave as it was."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx

from plane.wire.protocol import Usage
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_plane import CONFIG, RunningPlane, StartPlane
from tests.support.fixtures_postgres import open_db
from tests.support.local_http import local_client

HTTP = ("127.0.0.1", 0)


def approving(receiver: Receiver, extra: str = "") -> str:
    """CONFIG ($1.00 a day each) with alerts to both of `receiver`'s endpoints."""
    return (
        CONFIG
        + f"notify:\n  webhook: {receiver.url}/hook\n  ntfy: {receiver.url}/topic\n"
        + "  retries: 0\n"
        + extra
    )


async def held_plane(start_plane: StartPlane, receiver: Receiver, **kw: Any) -> RunningPlane:
    """A plane whose `demo` has spent $1.05 of its $1.00: held, its alert sent."""
    plane = await start_plane(approving(receiver, kw.pop("extra", "")), http=HTTP, **kw)
    plane.llm.reply("All of it.", usage=Usage(input_tokens=1050))
    await plane.turn("demo", "spend")
    await receiver.until_hook("held")
    assert plane.runtime.notifier is not None, "notify: is configured"
    await plane.runtime.notifier.drained()
    return plane


def held_links(receiver: Receiver) -> dict[str, str]:
    """The last `held` webhook's links, by button label."""
    [*_, held] = [h for h in receiver.hooks() if h["event"] == "held"]
    return {a["label"]: a["url"] for a in held["actions"]}


def altered(url: str, **fields: str) -> str:
    """`url` with some of its query's fields replaced."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query.update(fields)
    return parts._replace(query=urlencode(query)).geturl()


async def post(url: str) -> httpx.Response:
    async with local_client() as client:
        return await client.post(url)


async def get(url: str) -> httpx.Response:
    async with local_client() as client:
        return await client.get(url)


@dataclass(frozen=True)
class Standing:
    """What a link must not change when it is refused."""

    ceilings: tuple[Decimal | None, Decimal | None]
    raises: list[tuple[Any, ...]]
    answered: list[tuple[Any, ...]]
    messages: int


async def rows(plane: RunningPlane, sql: str) -> list[tuple[Any, ...]]:
    """Read the plane's store as another reader would (its file, or PLANE_STORE's database)."""
    db = await open_db(plane.home.db)
    try:
        return [tuple(r) for r in await db.fetchall(sql)]
    finally:
        await db.close()


async def standing(plane: RunningPlane) -> Standing:
    services = plane.services
    db = await open_db(plane.home.db)  # one reader for both (on PostgreSQL, one backend)
    try:
        raises = [tuple(r) for r in await db.fetchall("SELECT * FROM raises")]
        answered = [
            tuple(r) for r in await db.fetchall("SELECT nonce FROM offers WHERE answer IS NOT NULL")
        ]
    finally:
        await db.close()
    said = await services.conversation.history("demo", 500)
    ceilings = services.gate.ceilings
    return Standing((ceilings.of("demo"), ceilings.of("scout")), raises, answered, len(said))
