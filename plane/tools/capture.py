"""Bounded capture of a process's output: the head and the tail are kept.

A command can print gigabytes; the model needs its beginning (what ran) and
its end (how it finished). The middle is dropped as it streams, so memory
stays bounded, and replaced by one marker that says how much was cut — the
model is never shown a cut it cannot see.
"""

from __future__ import annotations


class HeadTail:
    """Keeps the first `cap // 2` and the last `cap - cap // 2` bytes written."""

    def __init__(self, cap: int) -> None:
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.dropped_lines = 0

    def write(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail += chunk
        excess = len(self.tail) - self.tail_cap
        if excess > 0:
            self.dropped_lines += self.tail.count(b"\n", 0, excess)
            del self.tail[:excess]

    @property
    def cut(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        """The output, decoded (undecodable bytes replaced), with a marker where
        the middle was cut. Cuts are moved to line boundaries when one is near."""
        if not self.cut:
            return bytes(self.head + self.tail).decode("utf-8", errors="replace")
        head, tail = bytes(self.head), bytes(self.tail)
        lines = self.dropped_lines
        end = head.rfind(b"\n")
        if end >= len(head) // 2:
            head = head[: end + 1]
        start = tail.find(b"\n")
        if 0 <= start < len(tail) // 2:
            lines += 1
            tail = tail[start + 1 :]
        cut = self.total - len(head) - len(tail)
        marker = f"[… {cut:,} bytes ({lines:,} lines) cut from the middle …]\n"
        before = head.decode("utf-8", errors="replace")
        if before and not before.endswith("\n"):
            before += "\n"
        return before + marker + tail.decode("utf-8", errors="replace")
