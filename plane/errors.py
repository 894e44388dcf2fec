"""The plane's exceptions, every one of them. Each says, in one sentence, what a person can do.

    PlaneError                     code
    ├── ConfigError                invalid      agents.yaml is wrong; the plane does not start
    ├── NoSuchAgent                no_such_agent
    ├── AgentExists                exists
    ├── InvalidRequest             invalid      a well-formed request the plane refuses
    ├── ProviderError              internal     an LLM call failed after its retries
    │   ├── ProviderReplyError     internal     the provider answered with something unreadable
    │   │   └── BrokenReply        internal     (providers.base) it broke off after the provider
    │   │                                       may have billed: charged at an estimate
    │   └── ContextOverflow        internal     the prompt is more than the model's context holds
    ├── UnknownPrice               invalid      no price for a model: never treated as free
    ├── ToolError                  invalid      a tool call the plane refused (told to the model)
    │   └── UnknownRef             invalid      (economy.compress.refs; a KeyError too) a ref never
    │                                           stored, or past its ttl
    ├── LedgerError                internal     the ledger could not record spend: nothing proceeds
    │   └── AlreadyClosed          internal     a close of a call closed meanwhile (settled, failed,
    │                                           swept): nothing more is counted, nothing to cut
    ├── StoreError                 internal     a database cannot be opened, read or written:
    │                                           the plane does not start
    ├── StoreUnreachable           internal     the shared store is away: what would be written
    │                                           is refused, not kept and lost
    ├── LeaseLost                  internal     (several planes) another plane runs the agent
    │                                           now: a write of this one's for it is refused
    ├── AlreadyRunning             —            (daemon.server) another plane holds the home's lock
    ├── NotRunning                 —            (client side) no plane answers on the socket
    ├── RequestFailed              its own      (wire.client; client side) the plane answered with
    │                                           an error frame, whose code it keeps
    ├── PlaneRefused               —            (wire.once; client side) the same, for one ask read
    │                                           as plain JSON (`plane status`)
    ├── WrongReply                 —            (wire.errors; client side) the plane answered a
    │                                           request with a frame of a type it does not name
    ├── NotAnswering               —            (cli.connect) a plane holds its lock but does not
    │                                           answer
    ├── HomeNotADirectory          —            (home) PLANE_HOME is a file: no plane there
    └── NoAnswer                   —            (cli.failing) `send --wait` waited its whole timeout

Outside `PlaneError`: each is caught by its one caller, which says it as a
sentence (none reaches a user as it is):

    sqlite3.DatabaseError
    └── StoreFault                 PostgreSQL refused or failed a statement: caught where either
                                   engine's failure is (the ledger's `LedgerError`)
    ValueError
    ├── BadLimit                   (money.limits) not a limit: its message is /limit's reply
    ├── NotALink                   (money.approvals) a query not shaped like an approval link:
    │                              the page says so
    ├── PatchError                 (tools.unidiff) a patch unreadable or not fitting: the tool's
    │                              refusal
    └── BadFrame                   (wire.protocol.codec) a line that is not a valid frame: an
        │                          error reply
        └── UnknownFrame           (wire.protocol.codec) a newer peer's frame type: skipped and
                                   logged
    OSError
    └── NoLandlock                 (tools.sandbox) the kernel has no Landlock: commands are refused
    Exception
    ├── CommandRefused             (agents.commands) a slash command that does not apply here: its
    │                              message is the reply
    ├── GatewayRefused             (gateway.refused) a gateway call refused before the ledger,
    │                              answered as the client's API says an error
    ├── Full                       (money.budgets) a call refused at admission by a ceiling above
    │   │                          its agent's (nothing written): said as the hold it is
    │   ├── FleetFull              (money.budgets) the fleet's ceiling
    │   ├── GroupFull              (money.budgets) its agent's group's ceiling
    │   └── TagFull                (money.budgets) its tag's ceiling (a gateway call's)
    ├── AlreadyAnswered            (money.approvals) an alert's offer answered by another request
    │                              first: the link says it was used
    ├── _UpstreamCut               (gateway.forward, private to it) the upstream broke a stream:
    │                              its client's connection is broken too, the call settled
    ├── _Unsure                    (economy.compress.formats.python_scan, private to it) a line
    │                              not plainly Python to the line scanner: the file is parsed
    └── Failed                     (tools.mcp.link, private to tools.mcp) an MCP server that could
                                   not do what was asked: the tool's result says so
    ruamel.yaml's ScannerError
    └── _TooMuch                   (yaml_reader, private to it) agents.yaml past a bound: said as a
                                   `ConfigError`

`PlaneError` and `NotRunning` are defined in `plane.wire.errors`, which the
socket client and the TUI import without this module; a class drawn with a
module in brackets is defined there, beside its only users. The socket
server maps each `PlaneError` to its protocol error code; the CLI prints the
sentence and exits non-zero. `tests/test_error_tree.py` finds every exception
class of the plane and checks that it is drawn here.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from plane.wire.errors import NotRunning, PlaneError

if TYPE_CHECKING:  # a type only: importing the protocol (pydantic) costs a CLI call ~0.1 s
    from datetime import datetime

    from plane.wire.protocol import ErrorCode

__all__ = [
    "AgentExists",
    "AlreadyClosed",
    "ConfigError",
    "ContextOverflow",
    "InvalidRequest",
    "LeaseLost",
    "LedgerError",
    "NoSuchAgent",
    "NotRunning",
    "PlaneError",
    "ProviderError",
    "ProviderReplyError",
    "StoreError",
    "StoreFault",
    "StoreUnreachable",
    "ToolError",
    "UnknownPrice",
]


class ConfigError(PlaneError):
    code: ErrorCode = "invalid"


class NoSuchAgent(PlaneError):
    code: ErrorCode = "no_such_agent"

    def __init__(self, name: str) -> None:
        super().__init__(f"No agent named {name!r}. `plane status` lists them.")
        self.name = name


class AgentExists(PlaneError):
    code: ErrorCode = "exists"


class InvalidRequest(PlaneError):
    code: ErrorCode = "invalid"


class ProviderError(PlaneError):
    code: ErrorCode = "internal"


class ProviderReplyError(ProviderError):
    pass


class ContextOverflow(ProviderError):
    """The provider refused the prompt as longer than the model's context
    (llama.cpp's `exceed_context_size_error`, OpenAI's `context_length_exceeded`,
    Anthropic's "prompt is too long"). Sending it again fails the same way:
    the turn that hit it must not leave it in the model's history."""


class UnknownPrice(PlaneError):
    code: ErrorCode = "invalid"

    def __init__(self, model: str) -> None:
        super().__init__(
            f"No price is known for model {model!r}; add it under `pricing:` in agents.yaml."
        )
        self.model = model


class ToolError(PlaneError):
    code: ErrorCode = "invalid"


class LedgerError(PlaneError):
    code: ErrorCode = "internal"


class AlreadyClosed(LedgerError):
    """A call's close that found it closed already: its answer settled it as
    its turn was cut, or another plane swept it. What it counts is counted
    once, as the first close wrote it; a cut of it has nothing left to cut."""


class StoreError(PlaneError):
    code: ErrorCode = "internal"


class StoreUnreachable(PlaneError):
    """A request that would write to a store that cannot be reached now."""

    code: ErrorCode = "internal"


class LeaseLost(PlaneError):
    """A write for an agent under a lease this plane no longer holds (at
    the epoch it was made under), or a call refused at admission for one.
    Whatever the plane was doing for that agent stops, and says nothing:
    the plane that holds the lease now answers."""

    code: ErrorCode = "internal"


class StoreFault(sqlite3.DatabaseError):
    """PostgreSQL refused or failed a statement (its SQLSTATE in `sqlstate`).
    A `sqlite3.DatabaseError`, so what catches a store's failure (the
    ledger's `LedgerError`) catches either engine's. `unreachable`: the
    server could not be reached (a connection lost, refused or timed out),
    not a statement refused; `since`: since when, as the plane says it
    (`plane status`), when known. `kept_unknown`: the link broke during a
    COMMIT, so whether the write was kept is not known."""

    def __init__(
        self,
        message: str,
        sqlstate: str | None = None,
        *,
        unreachable: bool = False,
        since: datetime | None = None,
        kept_unknown: bool = False,
    ) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
        self.unreachable = unreachable
        self.since = since
        self.kept_unknown = kept_unknown


def away(error: BaseException | None) -> StoreFault | None:
    """The store being away, in `error` or what caused it: its fault (None:
    `error` is something else)."""
    while error is not None:
        if isinstance(error, StoreFault) and error.unreachable:
            return error
        error = error.__cause__
    return None


def unreachable(error: BaseException | None) -> bool:
    """Whether `error` (or what caused it) is the store being away."""
    return away(error) is not None


def lease_lost(agent: str, plane: str, holder: str | None) -> LeaseLost:
    """Why `plane` may spend nothing for `agent` now, as a call refused at
    admission says it: another plane (`holder`) runs it, or this one's
    lease ran low, was let go (to even out the fleet) or went (none, or
    this plane, named as its holder)."""
    if holder is not None and holder != plane:
        return LeaseLost(f"{agent} is run by {holder} now")
    return LeaseLost(f"{plane}'s lease on {agent} ran low, was let go or was taken")


def ledger_refused(error: sqlite3.Error, *, reading: bool = False) -> LedgerError:
    """What a ledger transaction the database refused means."""
    if reading:
        return LedgerError(f"The ledger could not be read ({error}).")
    return LedgerError(f"Spend could not be recorded in the ledger ({error}).")
