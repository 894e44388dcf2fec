"""A JSON document printed on one line, and the markup of an HTML page: what counts as a line.

A page-long line that parses whole as a JSON array or object (`json.dumps` of a
list of pages) is a document whose line breaks are its strings' `\\n` escapes.
An error word on one held line flagged every name of the whole document, so the
guard kept every page whole; it now flags the names of its own held line only,
and the bench's yardstick reads such a line the same way. An HTML page is shown
as its text, which drops the markup: the names of the markup on the page's error
lines are named once in the view, as the guard keeps names on error lines anywhere.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

from plane.economy.compress import compress
from plane.economy.compress.formats import jsondoc
from tests.plane.compress.helpers import round_trips

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
ERROR_LINE = "error: loader_quux could not open settings_zeta"


def _pages() -> list[dict[str, str]]:
    """Three pages of a manual, each a page of lines with names of its own; one line of
    the second reports an error."""
    pages = []
    for p in range(3):
        lines = [f"# Chapter {p}"]
        for n in range(40):
            lines.append(f"The option opt{p}x{n} sets limit{p}y{n} for the worker pool today.")
        if p == 1:
            lines.insert(25, ERROR_LINE)
        pages.append({"path": f"docs/chapter{p}.txt", "text": "\n".join(lines)})
    return pages


def test_a_one_line_document_folds_the_names_of_lines_without_an_error() -> None:
    text = json.dumps(_pages())
    assert "\n" not in text and len(text) > 4000
    result = compress(text, command="python3 dump_manual.py")
    assert result.compressor == "json"
    for name in _IDENT.findall(ERROR_LINE):
        assert name in result.text  # the error line's names stay
    assert "opt1x30" not in result.text  # a held line with no error word folds
    assert 1 - result.chars_out / result.chars_in > 0.5
    assert round_trips(text, result)


def test_a_line_that_is_not_one_whole_document_is_still_one_line() -> None:
    text = json.dumps(_pages())
    cut = text[: len(text) - 40]  # `| head -c`: it no longer parses
    assert jsondoc.is_document(text) and not jsondoc.is_document(cut)
    result = compress(cut, command="python3 dump_manual.py | head -c 20000")
    assert "opt1x30" in result.text  # on the one line an error word is on: kept
    assert round_trips(cut, result)


def _metrics() -> ModuleType:
    if "compress_metrics" in sys.modules:
        return sys.modules["compress_metrics"]
    path = Path(__file__).resolve().parents[3] / "bench" / "compress_metrics.py"
    spec = importlib.util.spec_from_file_location("compress_metrics", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["compress_metrics"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_bench_reads_a_one_line_document_as_the_lines_its_strings_hold() -> None:
    metrics = _metrics()
    text = json.dumps(_pages())
    words = metrics.salient(text).error_words
    assert {"loader_quux", "settings_zeta"} <= words
    assert "opt1x30" not in words
    assert "".join(metrics.read_lines(text)) == text
    cut = text[: len(text) - 40]
    assert "opt1x30" in metrics.salient(cut).error_words  # not a document: one line


def test_the_markup_names_on_an_html_page_s_error_lines_stay_in_view() -> None:
    rows = "\n".join(
        f'<tr><td class="cell">step {n}</td><td>finished in {n} seconds</td></tr>'
        for n in range(60)
    )
    error = '<p class="system-message-title">System Message: ERROR/3 (line 71)</p>'
    page = (
        "<!DOCTYPE html>\n<html><head><title>Build report</title></head><body>\n"
        f"<h1>Report</h1>\n{error}\n<table>\n{rows}\n</table>\n</body></html>\n"
    )
    result = compress(page, command="cat report.html")
    assert result.compressor == "html"
    assert "<table" not in result.text  # shown as text
    for name in _IDENT.findall(error):
        assert name in result.text  # `class`, `system`, `message` too: not only the text
    assert round_trips(page, result)
