"""The tests' own Python files, for the contracts over them: `make test`
installs the real clients under tests/e2e/ (Aider's virtualenv, Node's
packages), and their files are not the project's."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def own_sources(root: Path = ROOT) -> Iterator[Path]:
    """Every .py file under root/tests, in order, but an installed client's.
    An installed client's folder is left unwalked: Aider's virtualenv alone
    holds tens of thousands of files."""
    found: list[Path] = []
    for folder, subfolders, files in os.walk(root / "tests"):
        here = Path(folder)
        subfolders[:] = [name for name in subfolders if not _installed(here / name)]
        found += (here / name for name in files if name.endswith(".py"))
    yield from sorted(found)


def _installed(folder: Path) -> bool:
    """A virtualenv (its pyvenv.cfg), or Node's packages."""
    return folder.name == "node_modules" or (folder / "pyvenv.cfg").exists()
