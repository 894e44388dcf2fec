"""What a line on the socket may be, before any frame is read from it: the
protocol's version and its size limits. Here rather than in the protocol so
that a client which reads frames as plain JSON (`plane.wire.once`) knows
them without loading pydantic."""

PROTOCOL_VERSION = 3
"""3: fields a client of 2 does not know, which frames refuse: an agent's
row says why it is held (`hold_reason`), whether its spend holds a call
priced at a floor (`floor_priced`) and the model it stepped down from
(`stepped_down_from`); a turn's end whether it was held (`held`); a send's
reply whether another plane runs the agent (`elsewhere`); a cost line
whether its turn failed (`failed`).
2: a list that grows with the fleet or the day (a snapshot's rows, the
ledger's entries, a conversation's messages, the day's spenders) may come in
parts after its frame (`plane.wire.pages`). A client of protocol 1 cannot
read those frames (a field and frames it does not know), so the plane refuses
it at its hello, with the sentence that says which one to upgrade."""
MAX_FRAME_BYTES = 1 << 20
"""A frame longer than this (1 MiB) is refused without being parsed."""
PAGE_BYTES = 256 * 1024
"""A list's rows in one frame, at most (a single longer row goes alone):
a frame that would be longer is sent in parts of this size."""
MAX_ID = (1 << 63) - 1
"""The largest id SQLite stores: a bigger one is a bad frame, not a crash."""
