"""A search for an error word: every match is an error line, and its location is listed.

`grep -rn error src` prints nothing but error lines, each at a location of its own.
The guard reopened every folded match for its location, although the marker of a
fold of matches lists each one (`… 9 more matches at a.c:12,40`): the whole output
went out unchanged. A match is now reopened only for a name of its text that nothing
shown has, never for the location its marker lists.
"""

from __future__ import annotations

import re

from plane.economy.compress import compress
from tests.plane.compress.helpers import round_trips


def _grep() -> tuple[str, list[tuple[str, int]]]:
    at = [
        (f"src/driver{k}/io{j}.c", 10 + 7 * n) for k in range(6) for j in range(4) for n in range(5)
    ]
    lines = [f"{path}:{line}:        return handle_error(dev, -EIO);" for path, line in at]
    lines.insert(60, "src/driver2/io1.c:999:        panic_on_error(fatal_bus_fault);")
    return "\n".join(lines) + "\n", at


def test_a_search_for_errors_folds_matches_whose_text_is_shown() -> None:
    text, at = _grep()
    result = compress(text, command="grep -rn error src")
    assert result.compressor == "search"
    assert 1 - result.chars_out / result.chars_in > 0.5
    assert "panic_on_error(fatal_bus_fault)" in result.text  # a name nothing else shows
    for path, line in at:  # every location stays in view, in a line or a marker's list
        listed = re.compile(re.escape(path) + r":(?:\d+,)*" + str(line) + r"(?!\d)")
        assert listed.search(result.text), (path, line)
    assert round_trips(text, result)
