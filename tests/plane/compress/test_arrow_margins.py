"""Claude Code's Read tool numbers each line as `     12→text`: the margin is
taken off, the body compressed as the source it is, the numbers put back."""

from __future__ import annotations

import _weakrefset
import json
import logging
import pydoc
from pathlib import Path

import pytest

from plane.economy.compress import compress, expand


def test_a_numbered_read_is_compressed_as_source_with_its_numbers_kept() -> None:
    source = Path(_weakrefset.__file__).read_text()
    numbered = "\n".join(f"{n:>6}→{line}" for n, line in enumerate(source.split("\n"), 1))
    result = compress(numbered, command="cat /repo/_weakrefset.py")
    assert result.compressor == "source"
    assert "    36→class WeakSet:" in result.text.split("\n")
    assert any(line.endswith("→    def add(self, item):") for line in result.text.split("\n"))
    assert len(result.text) < 0.8 * len(numbered)
    assert expand(result.text, result.refs.__getitem__) == numbered


def test_a_numbered_page_of_html_is_compressed_as_it_is(caplog: pytest.LogCaptureFixture) -> None:
    """HTML is shown as text, a view of its whole source that numbers cannot be put
    back on: the numbered lines are compressed as they stand, with no error."""
    page = pydoc.html.page("json", pydoc.html.document(json))
    numbered = "\n".join(f"{n:>6}→{line}" for n, line in enumerate(page.split("\n"), 1))
    with caplog.at_level(logging.ERROR, logger="plane.economy.compress"):
        result = compress(numbered, command="cat /docs/json.html")
    assert not caplog.records, "the engine logged a failure"
    assert result.note == "" and len(result.text) < len(numbered)
    assert expand(result.text, result.refs.__getitem__) == numbered
