"""Where the plane keeps its files.

Everything the plane writes lives under one directory: the database, the
socket, logs, agents' workspaces, transcripts. It is `PLANE_HOME` when set,
else the user's data directory (platformdirs), so one variable moves a whole
plane — which is how tests and a second plane on the same machine stay apart.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP = "plane"


@dataclass(frozen=True)
class Home:
    root: Path

    @classmethod
    def from_env(cls) -> Home:
        override = os.environ.get("PLANE_HOME")
        root = Path(override) if override else Path(platformdirs.user_data_dir(APP))
        return cls(root.expanduser().resolve())

    def ensure(self) -> Home:
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self

    @property
    def db(self) -> Path:
        return self.root / "plane.db"

    @property
    def refs_db(self) -> Path:
        """The compression store: what compressed tool output left out."""
        return self.root / "refs.db"

    @property
    def socket(self) -> Path:
        return self.root / "plane.sock"

    @property
    def log(self) -> Path:
        return self.root / "plane.log"

    @property
    def workspaces(self) -> Path:
        return self.root / "workspaces"

    def workspace(self, agent: str) -> Path:
        return self.workspaces / agent


def user_config_path() -> Path:
    """agents.yaml in the user's config directory, used when ./agents.yaml is absent."""
    return Path(platformdirs.user_config_dir(APP)) / "agents.yaml"
