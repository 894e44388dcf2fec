"""The requests: client → plane, each stating its reply.

`class Send(Request[SendReply])` is the pair, stated once: the socket client
checks the reply against it, and the plane's table of handlers
(`plane.daemon.api`) is held to it. `AnyRequest` is their union, which the
plane reads (`codec.decode_request`).
"""

from __future__ import annotations

from datetime import date
from typing import (
    Annotated,
    Any,
    ClassVar,
    Generic,
    Literal,
    TypeGuard,
    TypeVar,
    get_args,
    get_origin,
)

from pydantic import BaseModel, Field

from plane.wire.framing import MAX_ID
from plane.wire.protocol.replies import (
    AgentReply,
    HelloReply,
    HistoryReply,
    LedgerReply,
    NewAgentReply,
    OkReply,
    SendReply,
    ShowAgentReply,
    SnapshotReply,
    SpendHistoryReply,
    SpendStackReply,
    StackBy,
)
from plane.wire.protocol.state import Frame, ToolSet

R = TypeVar("R", bound=Frame)


class Request(Frame, Generic[R]):
    """A frame a client sends, answered by an `R` (or by an `Error`, which may
    answer any request): `class Send(Request[SendReply])` is the pair, stated
    once. `reply` is `R` at run time; the socket client checks what came back
    against it (`PlaneClient.request`), and the plane's table of handlers
    (`plane.daemon.api`) is held to it by a test."""

    reply: ClassVar[type[Frame]]
    """The frame that answers this request."""
    changes: ClassVar[bool] = True
    """Whether answering it may change something (False: it only reads);
    a request the store being away stopped says that nothing did."""

    type: str
    id: int = 0
    """The client's number for the request, which its reply carries back:
    `PlaneClient.request` gives each request its own. Built in Python it may
    be left out; read from the socket it must be there (`decode_request`)."""

    def __class_getitem__(cls, reply: Any) -> Any:
        # typing's alias, not pydantic's parametrized model: the pair needs
        # stating, not a model class of its own, and pydantic's would build
        # this base's validator at import (~20 ms of every CLI command's start).
        return super(BaseModel, cls).__class_getitem__(reply)  # type: ignore[misc]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in cls.__dict__.get("__orig_bases__", ()):  # `Request[SendReply]`
            if get_origin(base) is Request:
                (cls.reply,) = get_args(base)

    def answered_by(self, frame: Frame) -> TypeGuard[R]:
        """`frame` is this request's reply (an `Error` is not: it is no answer)."""
        return isinstance(frame, self.reply)


class Hello(Request[HelloReply]):
    type: Literal["hello"] = "hello"
    changes: ClassVar[bool] = False
    protocol_version: int
    client: str = ""
    token: str | None = None
    """The plane's token (the file `token` in its home), on the Unix socket as
    on TCP: it is what tells the operator's clients from anything else that
    can reach the socket, an agent's commands included. Clients read it from
    the socket's directory; a missing or wrong one is `unauthorized`."""


class Subscribe(Request[SnapshotReply]):
    type: Literal["subscribe"] = "subscribe"
    changes: ClassVar[bool] = False


class Status(Request[SnapshotReply]):
    type: Literal["status"] = "status"
    changes: ClassVar[bool] = False


class Send(Request[SendReply]):
    """Post text to an agent's conversation as the operator."""

    type: Literal["send"] = "send"
    agent: str
    text: str = Field(min_length=1, max_length=200_000)


class History(Request[HistoryReply]):
    """Up to `limit` of an agent's messages, oldest first: the newest ones, or,
    with `before_id`, the ones just before that message (the previous page)."""

    type: Literal["history"] = "history"
    changes: ClassVar[bool] = False
    agent: str
    limit: int = Field(default=200, ge=1, le=10_000)
    before_id: int | None = Field(default=None, ge=1, le=MAX_ID)
    """Only messages with a smaller id: pass the oldest id you hold to page back.
    Fewer than `limit` back means the conversation's first message is among them."""


class NewAgent(Request[NewAgentReply]):
    type: Literal["new_agent"] = "new_agent"
    name: str
    model: str
    role: str = ""
    tools: ToolSet | None = None
    """None: the set that suits the model (`Snapshot.tool_defaults`)."""


class Ledger(Request[LedgerReply]):
    type: Literal["ledger"] = "ledger"
    changes: ClassVar[bool] = False
    day: date | None = None
    """None is the plane's today."""


class Stop(Request[OkReply]):
    type: Literal["stop"] = "stop"


class SpendHistory(Request[SpendHistoryReply]):
    """Spend over time, for the charts: `agent`'s day by hour and last 30
    days (None: the whole fleet's), and the day's top spenders."""

    type: Literal["spend_history"] = "spend_history"
    changes: ClassVar[bool] = False
    agent: str | None = None


class SpendStack(Request[SpendStackReply]):
    """The whole fleet's last 30 days stacked `by` agent, model or group: the `top`
    that spent the most apart, the rest summed as one. A request of its own
    (not a field of `spend_history`): a client that never asks for it never
    meets a reply shape it does not know."""

    type: Literal["spend_stack"] = "spend_stack"
    changes: ClassVar[bool] = False
    by: StackBy = "agent"
    top: int = Field(default=5, ge=1, le=20)


class DeleteAgent(Request[OkReply]):
    """Delete an agent made at run time. Its conversation and ledger rows are
    kept and its spend still counts for the day: deleting never refunds, and a
    new agent given the same name starts with that spend, not with $0."""

    type: Literal["delete_agent"] = "delete_agent"
    agent: str


class PauseAgent(Request[AgentReply]):
    """Pause (`paused` true) or resume an agent. Its ceiling is kept. Resuming
    an agent the loop guard held lets it go on (a gateway agent's too)."""

    type: Literal["pause_agent"] = "pause_agent"
    agent: str
    paused: bool = True


class RenameAgent(Request[AgentReply]):
    type: Literal["rename_agent"] = "rename_agent"
    agent: str
    new_name: str


class EditAgent(Request[AgentReply]):
    """Change what is given; a field left None is left as it is. All of it
    is checked before anything changes: one bad value changes nothing."""

    type: Literal["edit_agent"] = "edit_agent"
    agent: str
    role: str | None = Field(default=None, max_length=100_000)
    model: str | None = None
    tools: list[str] | None = Field(default=None, max_length=64)
    """Tool names; `["all"]` is every tool, `[]` none."""
    limit: str | None = Field(default=None, max_length=64)
    """As `/limit` takes it: `5`, `$0.25`, `off`."""


class Interrupt(Request[OkReply]):
    """Cut the agent's running turn: the call in flight is counted at its
    estimate, and the conversation says what the turn cost."""

    type: Literal["interrupt"] = "interrupt"
    agent: str


class ShowAgent(Request[ShowAgentReply]):
    type: Literal["show_agent"] = "show_agent"
    changes: ClassVar[bool] = False
    agent: str


AnyRequest = Annotated[
    Hello
    | Subscribe
    | Status
    | Send
    | History
    | NewAgent
    | Ledger
    | Stop
    | DeleteAgent
    | PauseAgent
    | RenameAgent
    | EditAgent
    | Interrupt
    | ShowAgent
    | SpendHistory
    | SpendStack,
    Field(discriminator="type"),
]
"""Any request, told apart by its `type`: what the plane reads from a client."""
