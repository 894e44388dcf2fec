"""Every file or folder of the repository the README (or a page of docs/) names exists.

The README points at the tests that prove each guarantee and at the modules
that keep it; a move that leaves the README pointing at nothing sends a
reader to look for a proof that is no longer there. A path inside an
absolute one (`/home/op/.local/share/plane/token`) is the user's, not the
repository's, and is not checked, nor is one inside an example's brace
expansion (`src/{app/a.py,docs/x.md}`); nor is one the repository ignores because
`make` makes it (`tests/e2e/node`, where `make test` installs the clients).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).parents[1]
NAMED = re.compile(r"(?<![\w/.~,{-])(?:tests|plane|tui|bench|screenshots|docs|\.ci)/[\w./-]+")


def named_paths(text: str) -> set[str]:
    """The repository paths `text` names, without the punctuation that ends a sentence."""
    return {match.rstrip(".,:;") for match in NAMED.findall(text)}


def test_a_path_is_found_and_a_users_path_is_not() -> None:
    text = "see `tests/plane/test_x.py`, and plane/store/. Not /home/op/plane/token."
    assert named_paths(text) == {"tests/plane/test_x.py", "plane/store/"}


def made_by_make() -> tuple[str, ...]:
    """The folders .gitignore names whole (no pattern): what make installs there."""
    lines = (REPO / ".gitignore").read_text().splitlines()
    return tuple(line.rstrip("/") for line in lines if line and not set(line) & set("*?[!#"))


PAGES = ["README.md", *sorted(str(page.relative_to(REPO)) for page in (REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES)
def test_every_path_a_page_names_exists(page: str) -> None:
    named = named_paths((REPO / page).read_text())
    assert len(named) > 10, f"{page} names the code and tests that keep its promises"
    made = made_by_make()
    assert "tests/e2e/node" in made
    missing = sorted(
        path
        for path in named
        if not (REPO / path).exists() and not path.rstrip("/").startswith(made)
    )
    assert missing == [], f"{page} names paths that are not in the repository: {missing}"
