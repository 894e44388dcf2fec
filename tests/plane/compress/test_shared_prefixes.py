"""Rules that remove more without hiding a detail, each on real output made on this machine.

A list of paths writes each directory once, its entries in braces.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from plane.economy.compress import compress
from plane.economy.compress.markers import MARKER_RE
from tests.plane.compress.helpers import kept_lines, round_trips

_BRACES = re.compile(r"(\S*/)\{([^{}\s]*)\}|(?<=[: ])(/\S+)(?= |\s*ref:)")


def _listed(markers: list[str]) -> set[str]:
    """Every path a marker lists: `dir/{a,b}` as dir/a and dir/b, a lone path as itself."""
    found: set[str] = set()
    for text in markers:
        for m in _BRACES.finditer(text):
            if m.group(3):
                found.add(m.group(3))
            else:
                found.update(m.group(1) + name for name in m.group(2).split(","))
    return found


def test_a_list_of_paths_keeps_every_path_with_each_directory_written_once() -> None:
    import email

    tree = str(Path(email.__file__).parent)
    text = subprocess.run(["find", tree], capture_output=True, text=True, check=True).stdout
    result = compress(text, command=f"find {tree}")
    assert result.compressor == "listing"
    markers = [m.group(0) for m in MARKER_RE.finditer(result.text)]
    assert any(" paths: " in m and "/{" in m for m in markers)
    shown = set(kept_lines(result)) | _listed(markers)
    hidden = [line for line in text.split("\n") if line and line not in shown]
    assert not hidden, hidden[:3]
    # the shared prefix `/usr/lib/python3.11/email/…` is written once per directory
    assert len(result.text) < 0.6 * len(text)
    assert round_trips(text, result)
