"""`make lint` runs mypy over plane/ and tui/, not over tests/: an ignore
written in a test silences no check and tells its reader of one that is not
made. None is written (mypy over tests/ is a step of its own: at mypy's
defaults it finds about 160 errors today, most of them arguments typed
looser in the tests than in the code)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.sources import own_sources

ROOT = Path(__file__).resolve().parents[1]
IGNORE = re.compile(r"#\s*type:\s*" + "ignore")


def test_no_test_carries_a_type_ignore() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in own_sources()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if IGNORE.search(line)
    ]
    assert found == [], "type: ignore in tests:\n" + "\n".join(found)
