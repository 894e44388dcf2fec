"""Every frame that crosses the plane's socket.

The plane and its clients (the TUI, the `plane` CLI) speak newline-delimited
JSON over a Unix socket (mode 0600) or TCP; on both, `hello` carries the
plane's token. Every frame is one of the pydantic models of this package,
told apart by its `type`; no untyped dict crosses the socket. With the rest
of `plane.wire` (and `plane.home`), it is all of `plane` that `tui` imports.

A conversation on the socket:

    client → hello (protocol_version, token) plane → welcome
    client → subscribe                       plane → snapshot, then events
    client → send / history / new_agent / …  plane → a reply with the same id

Replies carry the `id` of their request; events carry none. A frame the plane
cannot read gets an `error` reply (with the request's id when it could be
read) and changes nothing.

Each request states its reply: `class Send(Request[SendReply])`. The names
follow one rule. A request is named for its `type` (`new_agent` is
`NewAgent`); the reply to one request is that request's name and `Reply`
(`NewAgentReply`); a reply several requests share is named for what it
carries (`SnapshotReply` answers `status` and `subscribe`, `AgentReply` the
pause, rename and edit, `OkReply` what returns nothing). `Error` may answer
any request. The `type` strings on the wire stay as they were (`welcome`,
`sent`, `messages`, `agent_created`, …) where the classes were renamed:
they are the protocol, which clients of every version read and `plane
status` matches as plain JSON; a class name is only this package's.

Money is `Decimal`, which travels as a string: a dollar figure never passes
through a float.

One module a concern, each importing only those before it:

    state      the frame base; the shapes frames carry; the row pages (parts)
    replies    plane → client, with the request's id; `Error`; the `Reply` union
    requests   client → plane, each naming its reply; the `AnyRequest` union
    events     plane → subscribed clients; the `Event` union
    codec      frames to lines and back: encode, decode_*, BadFrame, UnknownFrame

Everything is imported from here, `plane.wire.protocol`, as it always was.
"""

from __future__ import annotations

from plane.wire.framing import MAX_FRAME_BYTES, MAX_ID, PROTOCOL_VERSION
from plane.wire.protocol.codec import (
    BadFrame,
    ServerFrame,
    UnknownFrame,
    decode_request,
    decode_server_frame,
    encode,
)
from plane.wire.protocol.events import (
    AgentRemoved,
    AgentRenamed,
    AgentUpdated,
    DayRolled,
    Event,
    FleetChanged,
    MessageAppended,
    StoreChanged,
    TextDelta,
    TurnFinished,
    TurnStarted,
)
from plane.wire.protocol.replies import (
    AgentReply,
    CeilingSource,
    Error,
    ErrorCode,
    HelloReply,
    HistoryReply,
    LedgerReply,
    NewAgentReply,
    OkReply,
    Reply,
    SendReply,
    ShowAgentReply,
    SnapshotReply,
    SpendHistoryReply,
    SpendSeries,
    SpendStackReply,
    StackBy,
)
from plane.wire.protocol.requests import (
    AnyRequest,
    DeleteAgent,
    EditAgent,
    Hello,
    History,
    Interrupt,
    Ledger,
    NewAgent,
    PauseAgent,
    RenameAgent,
    Request,
    Send,
    ShowAgent,
    SpendHistory,
    SpendStack,
    Status,
    Stop,
    Subscribe,
)
from plane.wire.protocol.state import (
    READ_ONLY_TOOLS,
    AgentRows,
    AgentState,
    AgentStatus,
    CommandInfo,
    ConversationMessage,
    Frame,
    GroupState,
    LedgerEntry,
    LedgerRows,
    LedgerStatus,
    MessageKind,
    MessageRows,
    Paged,
    Part,
    Snapshot,
    SpendLevel,
    SpendPoint,
    SpendRows,
    ToolSet,
    Usage,
)

__all__ = [
    "MAX_FRAME_BYTES",
    "MAX_ID",
    "PROTOCOL_VERSION",
    "READ_ONLY_TOOLS",
    "AgentRemoved",
    "AgentRenamed",
    "AgentReply",
    "AgentRows",
    "AgentState",
    "AgentStatus",
    "AgentUpdated",
    "AnyRequest",
    "BadFrame",
    "CeilingSource",
    "CommandInfo",
    "ConversationMessage",
    "DayRolled",
    "DeleteAgent",
    "EditAgent",
    "Error",
    "ErrorCode",
    "Event",
    "FleetChanged",
    "Frame",
    "GroupState",
    "Hello",
    "HelloReply",
    "History",
    "HistoryReply",
    "Interrupt",
    "Ledger",
    "LedgerEntry",
    "LedgerReply",
    "LedgerRows",
    "LedgerStatus",
    "MessageAppended",
    "MessageKind",
    "MessageRows",
    "NewAgent",
    "NewAgentReply",
    "OkReply",
    "Paged",
    "Part",
    "PauseAgent",
    "RenameAgent",
    "Reply",
    "Request",
    "Send",
    "SendReply",
    "ServerFrame",
    "ShowAgent",
    "ShowAgentReply",
    "Snapshot",
    "SnapshotReply",
    "SpendHistory",
    "SpendHistoryReply",
    "SpendLevel",
    "SpendPoint",
    "SpendRows",
    "SpendSeries",
    "SpendStack",
    "SpendStackReply",
    "StackBy",
    "Status",
    "Stop",
    "StoreChanged",
    "Subscribe",
    "TextDelta",
    "ToolSet",
    "TurnFinished",
    "TurnStarted",
    "UnknownFrame",
    "Usage",
    "decode_request",
    "decode_server_frame",
    "encode",
]
