"""A long list of paths stays in view, but not as one line a model must decode: no
marker line over 2,000 characters, and a path the output names where it matters (an
error, a diff header, a search match) is written whole in the marker that holds it;
and the time to fold a long listing grows with it, not with its square."""

from __future__ import annotations

import pytest

from plane.economy.compress import compress, expand
from plane.economy.compress.markers import MARKER_RE
from plane.economy.compress.plan import Plan

PATHS = [f"src/pkg{i % 40}/sub{i % 7}/mod{i}.py" for i in range(3000)]


def _markers(text: str) -> list[str]:
    return [m.group(0) for m in MARKER_RE.finditer(text)]


def test_a_long_listing_is_folded_as_markers_of_at_most_2000_characters() -> None:
    listing = "\n".join(PATHS)
    result = compress(listing, command="find src -name '*.py'")
    markers = _markers(result.text)
    assert len(markers) > 10 and max(map(len, markers)) <= 2000
    assert max(len(line) for line in result.text.split("\n")) <= 2000
    assert expand(result.text, result.refs.__getitem__) == listing
    for n in (5, 1283, 2999):  # every name stays in view, in a marker's list
        assert f"mod{n}.py" in result.text


def _holding(text: str, name: str) -> str:
    [marker] = [m for m in _markers(text) if name in m]
    return marker


def test_a_path_an_error_names_is_written_whole_in_the_list() -> None:
    lines = [*PATHS[:400], f"find: '{PATHS[83]}': Permission denied"]
    result = compress("\n".join(lines), command="find src -name '*.py'")
    assert PATHS[83] == "src/pkg3/sub6/mod83.py"
    assert PATHS[83] in _holding(result.text, "mod83.py")
    assert PATHS[84] not in _holding(result.text, "mod84.py"), "the others are braced"


def test_paths_a_diff_header_or_a_match_names_are_written_whole() -> None:
    lines = [
        *PATHS[:400],
        f"diff --git a/{PATHS[45]} b/{PATHS[45]}",
        f"{PATHS[49]}:12:    return value",
    ]
    result = compress("\n".join(lines), command="find src -name '*.py'")
    assert PATHS[45] in _holding(result.text, "mod45.py")
    assert PATHS[49] in _holding(result.text, "mod49.py")
    assert PATHS[48] not in _holding(result.text, "mod48.py"), "the others are braced"


def test_a_listing_of_many_directories_reads_its_fold_mask_a_few_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`ls -lR` has a section per directory: the plan's mask of folded lines was built
    once per section, so the time grew with the square of the output."""
    sections = []
    for d in range(300):
        rows = [f"-rw-r--r-- 1 u u {100 + f} Jan  1 00:00 file{f}.txt" for f in range(12)]
        sections.append("\n".join([f"./dir{d}:", "total 48", *rows]))
    listing = "\n\n".join(sections)
    built = 0
    mask = Plan.folded_mask

    def counted(plan: Plan) -> list[bool]:
        nonlocal built
        built += 1
        return mask(plan)

    monkeypatch.setattr(Plan, "folded_mask", counted)
    result = compress(listing, command="ls -lR")
    assert result.compressor == "listing" and len(result.text) < len(listing) / 2
    assert built < 20, f"the mask was built {built} times for 300 sections"
