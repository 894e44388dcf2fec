"""The tests' own Python files, for the contracts over them: `make test`
installs the real clients under tests/e2e/ (Aider's virtualenv, Node's
packages), and their files are not the project's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def own_sources(root: Path = ROOT) -> Iterator[Path]:
    """Every .py file under root/tests, in order, but an installed client's."""
    tests = root / "tests"
    for path in sorted(tests.rglob("*.py")):
        folders = path.relative_to(tests).parents
        if not any(_installed(tests / folder) for folder in folders):
            yield path


def _installed(folder: Path) -> bool:
    """A virtualenv (its pyvenv.cfg), or Node's packages."""
    return folder.name == "node_modules" or (folder / "pyvenv.cfg").exists()
