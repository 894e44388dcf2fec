"""What the TUI remembers between launches: the agent it last showed.

A small JSON file in the plane's home (`Home.tui_memory`: on the socket, the
socket's own directory; over TCP, this machine's `$PLANE_HOME`), keyed by
the plane's address, so two planes each keep their own. Forgetting is
harmless and remembering is a convenience: a file that cannot be read or
written is ignored (logged), never an error on the operator's screen.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from plane.home import Home

log = logging.getLogger(__name__)


class Memory:
    """`recall(address)` and `remember(address, agent)`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def for_socket(cls, socket: Path | None) -> Memory:
        home = Home(socket.parent) if socket is not None else Home.from_env()
        return cls(home.tui_memory)

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            log.warning("cannot read %s: %s", self.path, error)
            return {}
        if not isinstance(data, dict):
            return {}
        return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}

    def recall(self, address: str) -> str | None:
        return self._read().get(address)

    def remember(self, address: str, agent: str) -> None:
        data = self._read()
        if data.get(address) == agent:
            return
        data[address] = agent
        spare = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        try:
            spare.unlink(missing_ok=True)  # a crashed launch's, which had this pid
            _write_private(spare, json.dumps(data, indent=1, sort_keys=True).encode())
            spare.replace(self.path)  # whole or not at all: a crash never leaves half a file
        except OSError as error:
            log.warning("cannot write %s: %s", self.path, error)
            spare.unlink(missing_ok=True)


def _write_private(path: Path, data: bytes) -> None:
    """`data` in a new file made 0600, as the home's files are: it names the
    operator's agents, and is never readable by others, not for an instant."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(path, flags, 0o600), "wb") as file:
        file.write(data)  # whole: a raw write may take only part
