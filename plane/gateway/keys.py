"""A key per gateway agent: what its client sends as its API key or bearer token.

Only a hash is kept (`gateway-keys` in the home, 0600): a key is printed once,
when it is made, and `plane key AGENT` again makes a new one, which replaces
the old at once (the running plane reads the file on each request, so no
restart is needed). A key is 32 random bytes, so an unsalted SHA-256 is as
hard to reverse as the key is to guess.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
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
        wanted = _digest(key)
        found = None
        for agent, digest in self._read().items():
            if hmac.compare_digest(digest, wanted):
                found = agent
        return found

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
