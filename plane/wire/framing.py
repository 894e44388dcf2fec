"""What a line on the socket may be, before any frame is read from it: the
protocol's version and its size limits. Here rather than in the protocol so
that a client which reads frames as plain JSON (`plane.wire.once`) knows
them without loading pydantic."""

PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 1 << 20
"""A frame longer than this (1 MiB) is refused without being parsed."""
MAX_ID = (1 << 63) - 1
"""The largest id SQLite stores: a bigger one is a bad frame, not a crash."""
