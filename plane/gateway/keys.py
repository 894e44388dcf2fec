"""A key per gateway agent: what its client sends as its API key or bearer token.

Only a hash is kept (`gateway-keys` in the home, 0600): a key is printed once,
when it is made, and `plane key AGENT` again makes a new one, which replaces
the old at once (the running plane looks at the file on each request, and
reads it again whenever it was replaced: no restart is needed). A key is 32
random bytes, so an unsalted SHA-256 is as hard to reverse as the key is to
guess; and a key is found by its hash in a table, in one lookup whatever the
fleet's size, which tells a guesser nothing of any key.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from pathlib import Path

from plane.errors import PlaneError

PREFIX = "plane-"


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class Keys:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._seen: tuple[int, int, int] | None = None
        """The file as last read: its inode, time and size (`os.replace` gives
        every new one an inode of its own)."""
        self._agents: dict[str, str] = {}
        """By key hash, its agent, as the file said when last read."""

    def make(self, agent: str) -> str:
        """A new key for `agent`, replacing any it had; returned once, never stored."""
        key = f"{PREFIX}{agent}-{secrets.token_urlsafe(32)}"
        hashes = self._read()
        hashes[agent] = _digest(key)
        self._write(hashes)
        return key

    def agent_of(self, key: str) -> str | None:
        """The agent whose key this is; None for a key that is no agent's."""
        if not key:
            return None
        return self._by_digest().get(_digest(key))

    def _by_digest(self) -> dict[str, str]:
        """The agents by key hash, read again only when the file was replaced."""
        try:
            stat = os.stat(self._path)
        except FileNotFoundError:
            self._seen, self._agents = None, {}
            return self._agents
        except OSError:
            stat = None  # said by `_read`, in its sentence
        seen = None if stat is None else (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if seen is None or seen != self._seen:
            hashes = self._read()
            self._agents = {digest: agent for agent, digest in sorted(hashes.items())}
            self._seen = seen
        return self._agents

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self._path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise PlaneError(
                f"The gateway's keys in {self._path} cannot be read ({exc}); "
                "`plane key AGENT` makes a new key for each agent."
            ) from None
        if not isinstance(data, dict):
            return {}
        return {str(a): str(d) for a, d in data.items()}

    def _write(self, hashes: dict[str, str]) -> None:
        """Whole, 0600 from its creation, renamed into place."""
        draft = self._path.with_name(f".{self._path.name}.new")
        with contextlib.suppress(FileNotFoundError):
            draft.unlink()
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(draft, flags, 0o600)
        try:
            os.write(fd, json.dumps(hashes, sort_keys=True).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(draft, self._path)
