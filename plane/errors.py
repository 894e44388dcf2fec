"""The plane's exceptions. Each says, in one sentence, what a person can do.

    PlaneError                     code
    ├── ConfigError                invalid      agents.yaml is wrong; the plane does not start
    ├── NoSuchAgent                no_such_agent
    ├── AgentExists                exists
    ├── InvalidRequest             invalid      a well-formed request the plane refuses
    ├── ProviderError              internal     an LLM call failed after its retries
    │   ├── ProviderReplyError     internal     the provider answered with something unreadable
    │   └── ContextOverflow        internal     the prompt is more than the model's context holds
    ├── UnknownPrice               invalid      no price for a model: never treated as free
    ├── ToolError                  invalid      a tool call the plane refused (told to the model)
    ├── LedgerError                internal     the ledger could not record spend: nothing proceeds
    ├── StoreError                 internal     a database cannot be opened, read or written:
    │                                           the plane does not start
    └── NotRunning                 —            (client side) no plane answers on the socket

`PlaneError` and `NotRunning` are defined in `plane.wire.errors`, which the
socket client and the TUI import without this module. The socket server
maps each to its protocol error code; the CLI prints the sentence and exits
non-zero.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from plane.wire.errors import NotRunning, PlaneError

if TYPE_CHECKING:  # a type only: importing the protocol (pydantic) costs a CLI call ~0.1 s
    from plane.wire.protocol import ErrorCode

__all__ = [
    "AgentExists",
    "ConfigError",
    "ContextOverflow",
    "InvalidRequest",
    "LedgerError",
    "NoSuchAgent",
    "NotRunning",
    "PlaneError",
    "ProviderError",
    "ProviderReplyError",
    "StoreError",
    "StoreFault",
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


class StoreError(PlaneError):
    code: ErrorCode = "internal"


class StoreFault(sqlite3.DatabaseError):
    """PostgreSQL refused or failed a statement (its SQLSTATE in `sqlstate`).
    A `sqlite3.DatabaseError`, so what catches a store's failure (the
    ledger's `LedgerError`) catches either engine's."""

    def __init__(self, message: str, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
