"""A client of the running plane, for one command: THE client (`connect`,
`with_client`), or one request answered on a plain socket (`ask`, for
`plane status`, whose process loads no event loop)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from plane.errors import NotRunning, PlaneError
from plane.home import Home, HomeNotADirectory, PlaneState
from plane.wire import once
from plane.wire.token import read_token

if TYPE_CHECKING:  # loaded when used: `plane status` reaches the plane without it (pydantic)
    from plane.wire.client import PlaneClient

T = TypeVar("T", covariant=True)


class Dial(Protocol[T]):
    """How a command reaches the plane: THE client's `connect`, or a one-shot ask."""

    def __call__(
        self, socket: Path, *, tcp: tuple[str, int] | None = ..., token: str | None = ...
    ) -> Awaitable[T]: ...


@dataclass(frozen=True)
class Remote:
    """`plane --tcp HOST:PORT [--token T]`: the plane every client command of
    this run talks to, instead of the home's socket."""

    tcp: tuple[str, int]
    token: str | None


_remote: Remote | None = None
"""Set once, by `plane.cli.main`, from the top-level options: a module value
rather than an argument so the commands keep their one-argument shape."""


def aim(remote: Remote | None) -> None:
    global _remote
    _remote = remote


def remote() -> Remote | None:
    return _remote


def with_client(work: Callable[[PlaneClient], Awaitable[int]]) -> int:
    import asyncio  # here: `plane status` reaches the plane without an event loop

    async def run() -> int:
        client = await connect(Home.from_env())
        try:
            return await work(client)
        finally:
            await client.close()

    return asyncio.run(run())


async def connect(home: Home) -> PlaneClient:
    """A client of the plane in `home` (see `reach`)."""
    from plane.wire.client import PlaneClient

    return await reach(home, PlaneClient.connect)


async def reach(home: Home, dial: Dial[T]) -> T:
    """`dial` the plane in `home`, or the one `--tcp` names; when none
    answers, what its lock says: no plane, or one starting or stopping
    (its socket closed)."""
    if _remote is not None:
        token = _remote.token or read_token(home.token)  # a plane on this machine: its home's
        return await dial(home.socket, tcp=_remote.tcp, token=token)
    try:
        return await dial(home.socket)
    except NotRunning as exc:
        raise _why(home, exc) from None
    except NotADirectoryError:
        raise HomeNotADirectory(home.root) from None


def ask(home: Home, request: dict[str, Any]) -> dict[str, Any]:
    """The reply to one `request` of the plane in `home` (or `--tcp`'s), as
    plain JSON (`plane.wire.once`), blocking: `reach` without an event loop."""
    if _remote is not None:
        token = _remote.token or read_token(home.token)
        return once.ask(home.socket, request, tcp=_remote.tcp, token=token)
    try:
        return once.ask(home.socket, request)
    except NotRunning as exc:
        raise _why(home, exc) from None
    except NotADirectoryError:
        raise HomeNotADirectory(home.root) from None


def _why(home: Home, refused: NotRunning) -> PlaneError:
    """Why nothing answered, by the lock: no plane, or one starting or stopping."""
    state = home.state()
    return refused if state == "none" else NotAnswering(home, state)


class NotAnswering(PlaneError):
    def __init__(self, home: Home, state: PlaneState) -> None:
        said = {
            "starting": "is starting; try again in a moment",
            "stopping": "is stopping",
            "running": f"holds its lock but does not answer on {home.socket}",
        }
        super().__init__(f"The plane in {home.root} {said.get(state, state)}.")
        self.state = state
