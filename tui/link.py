"""The TUI's link to the plane: a thin Textual layer over THE socket client
(`plane.wire.client.PlaneClient`).

The link is deliberately not a widget: it connects (Unix socket, or TCP with
a token), says hello, subscribes, and posts what the plane says to the app
as Textual messages, in the order it arrived: the snapshot first, then each
event, so the store never sees an event from before the snapshot it came
after. When the plane goes away it says so, waits (with backoff), and does it
all again; the fresh snapshot is the resync. A plane that refuses this client
(`unauthorized`) is told once, finally: trying again would be refused the
same way.

A request is `link.request(frame)`: the reply its class names
(`Send` → `SendReply`), within the time its kind is given (`Timeouts`); every
way one can fail becomes one `LinkFailed`, with a sentence to show.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from textual.message import Message

from plane.wire import protocol as p
from plane.wire.client import NotRunning, PlaneClient, PlaneError, RequestFailed, WrongReply
from tui.messages import PlaneConnected, PlaneEvent, PlaneLost

R = TypeVar("R", bound=p.Frame)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Timeouts:
    """How long the link waits for each kind of answer before saying so."""

    request_s: float = 10.0
    """A status, a page of history, a send (the plane answers these at once;
    the agent's reply comes later, as events)."""
    new_agent_s: float = 90.0
    """Creating an agent: the first one on the embedded model starts it, up
    to a minute on a slow machine. Also an edit (a new model may be that
    one) and a delete (a turn in flight is cut first, as long as an
    interrupt may take)."""
    reconnect_s: float = 3.0
    """How long a request made while the link reconnects waits for it (at
    most its own time): a plane restarting is back within it."""

    def of(self, request: p.Request[Any]) -> float:
        return self.new_agent_s if isinstance(request, SLOW) else self.request_s


SLOW = (p.NewAgent, p.EditAgent, p.DeleteAgent)
"""The requests that wait `Timeouts.new_agent_s`."""


Failure = Literal["refused", "offline", "timeout"]


class LinkFailed(Exception):
    """A request did not go through. `str()` is why, as the operator reads it:
    the plane's own sentence when it refused, else what happened."""

    def __init__(self, request: p.Request[Any], failure: Failure, reason: str) -> None:
        super().__init__(reason)
        self.request = request
        """What was asked."""
        self.failure: Failure = failure


@dataclass(frozen=True)
class Address:
    """Where the plane listens: a Unix socket path, or host:port with a token.

    On the socket the token is read from the socket's directory (the plane's
    home) at every attempt, unless given: a plane that starts after the app
    has made it by the time its socket answers."""

    path: Path | None = None
    host: str | None = None
    port: int | None = None
    token: str | None = None

    @classmethod
    def tcp(cls, host_port: str, token: str | None) -> Address:
        host, _, port = host_port.rpartition(":")
        return cls(host=host or "127.0.0.1", port=int(port), token=token)

    async def connect(self, within_s: float) -> PlaneClient:
        tcp = (self.host or "127.0.0.1", self.port) if self.port is not None else None
        socket = self.path or Path("plane.sock")
        return await PlaneClient.connect(
            socket, tcp=tcp, token=self.token, name="tui", within_s=within_s
        )

    def __str__(self) -> str:
        return str(self.path) if self.path is not None else f"{self.host}:{self.port}"


@dataclass
class Backoff:
    """Delays between reconnection attempts: doubling from `first`, capped at
    `most`, so a restarting plane is found within seconds and a dead one is
    not hammered."""

    first: float = 0.25
    most: float = 5.0

    def delay(self, attempt: int) -> float:
        return min(self.most, self.first * 2.0 ** max(0, attempt - 1))


class Link:
    """Talks to one plane for the life of the app."""

    def __init__(
        self,
        address: Address,
        post: Callable[[Message], Any],
        *,
        backoff: Backoff | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        self.address = address
        self._post = post
        self._backoff = backoff or Backoff()
        self.timeouts = timeouts or Timeouts()
        self._client: PlaneClient | None = None
        self._up = asyncio.Event()
        """Set while connected; a request made during a reconnect waits on it."""
        self._ever_up = False
        self._was_up = False
        """The last session got as far as a snapshot: the next wait starts short."""
        self.in_browser = False
        """The app is drawn in a browser (`plane web`): no terminal of its own
        to quit to, and the page reconnects by itself (set by the app)."""

    @property
    def connected(self) -> bool:
        return self._client is not None

    @property
    def reconnecting(self) -> bool:
        """Down after it was up: a request made now waits a moment for the
        link to come back (`Timeouts.reconnect_s`) before it is refused."""
        return self._ever_up and not self.connected

    # ── the connection's life ──────────────────────────────────────────────

    async def run(self) -> None:
        """Connect, serve, and reconnect until cancelled, or until the plane
        refuses this client."""
        attempt = 0
        while True:
            try:
                reason = await self._session()
            except RequestFailed as exc:
                if exc.code == "unauthorized":
                    where = str(self.address)
                    self._post(PlaneLost(f"{exc} {_FINAL}", 0, attempt + 1, where, final=True))
                    return
                reason = str(exc)
            except (PlaneError, OSError, TimeoutError) as exc:
                reason = _sentence(exc, self.address, self.in_browser)
            except Exception:  # a defect: the link says so and tries again, never dies
                log.exception("the link to %s", self.address)
                reason = "The connection to the plane ended on an error in this app."
            attempt = 1 if self._was_up else attempt + 1
            delay = self._backoff.delay(attempt)
            self._post(PlaneLost(reason, delay, attempt, str(self.address)))
            await asyncio.sleep(delay)

    async def _session(self) -> str:
        """One connection, from hello to its end; why it ended."""
        self._was_up = False
        client = await self.address.connect(self.timeouts.request_s)
        try:
            reply = await client.request(p.Subscribe(), within_s=self.timeouts.request_s)
            self._client, self._was_up = client, True
            self._ever_up = True
            self._up.set()
            # The plane sends no event before the snapshot it follows; posted
            # from here, in stream order, none overtakes it either.
            self._post(PlaneConnected(reply.snapshot, str(self.address)))
            async for event in client.events():
                self._post(PlaneEvent(event))
            return client.ended or "The plane closed the connection."
        finally:
            self._client = None
            self._up.clear()
            await client.close()

    # ── requests ───────────────────────────────────────────────────────────

    async def request(self, asked: p.Request[R]) -> R:
        """The reply to `asked` (the one its class names), within its time
        (`Timeouts.of`); every failure is a `LinkFailed`."""
        within_s = self.timeouts.of(asked)
        client = self._client
        if client is not None and not client.open:
            self._up.clear()  # ending: its session's end clears it too, a moment later
            client = None
        if client is None and self._ever_up:
            # Reconnecting: nothing was sent yet, so waiting briefly for the
            # connection to come back loses nothing and sends nothing twice.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._up.wait(), min(within_s, self.timeouts.reconnect_s))
            client = self._client
        if client is None:
            raise LinkFailed(asked, "offline", _OFFLINE)
        try:
            return await client.request(asked, within_s=within_s)
        except (RequestFailed, WrongReply) as exc:
            raise LinkFailed(asked, "refused", str(exc)) from None
        except TimeoutError:
            raise LinkFailed(asked, "timeout", "no answer in time") from None
        except (PlaneError, OSError):
            raise LinkFailed(asked, "offline", _OFFLINE) from None


class Asks(Protocol):
    """What a screen needs of the link: a request's reply, or `LinkFailed`
    (tests give a screen answers of their own)."""

    async def request(self, asked: p.Request[R]) -> R: ...


_OFFLINE = "no connection to the plane"
_FINAL = "Not trying again: start the app again once the plane would let it in."


def _sentence(exc: BaseException, address: Address, in_browser: bool = False) -> str:
    if isinstance(exc, TimeoutError):
        return "The plane did not answer in time."
    if isinstance(exc, NotRunning | ConnectionRefusedError | FileNotFoundError):
        if address.path is None:  # a plane elsewhere: `plane` would start one here
            return "The plane is not running; `plane serve --tcp` on its machine starts it."
        if in_browser:  # ctrl+q would end this page's TUI, and `plane` opens one in a terminal
            return (
                "The plane is not running; run `plane` on this machine, which starts it in the"
                " background: this page reconnects by itself."
            )
        # `plane` typed beside this TUI opens a second one; after it, it starts
        # the plane in the background and opens the TUI again (not `plane serve`,
        # which holds a terminal).
        return (
            "The plane is not running; quit (ctrl+q) and run `plane`, which starts it in the"
            " background and opens the TUI again."
        )
    text = str(exc).strip()
    return text or type(exc).__name__
