"""Shared test fixtures. Each `tests/support/fixtures_*.py` module is a pytest
plugin that registers its own; this file only collects them."""

from pathlib import Path

pytest_plugins = [
    f"tests.support.{path.stem}"
    for path in sorted((Path(__file__).parent / "support").glob("fixtures_*.py"))
]
