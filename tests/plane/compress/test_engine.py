"""The engine's contract: threshold, round trip, fail-open, never larger, deterministic."""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plane.economy.compress import MIN_CHARS, compress, expand, refs_in
from plane.economy.compress import engine as engine_module
from plane.economy.compress.markers import ref_for
from plane.economy.compress.plan import render
from tests.plane.compress.helpers import FIXTURES, fixture, round_trips, run
from tests.support.fixtures_examples import examples

ROOT = Path(__file__).resolve().parents[3]


# Outputs where keeping every detail leaves nothing worth a marker: sent unchanged.
WHOLE = {
    "pip_download_harness.json.txt",  # each retry names its own connection object
    "python_defs.txt",  # method signatures, each one once, no bodies to elide
}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_every_fixture_round_trips_and_shrinks(name: str) -> None:
    text, result = run(name)
    assert round_trips(text, result)
    if name in WHOLE:
        assert result.text == text and result.note == "not smaller"
        return
    assert result.chars_out < result.chars_in, result.note
    assert result.chars_in == len(text) and result.chars_out == len(result.text)
    for ref, content in result.refs.items():
        assert ref == ref_for(content)
        assert ref in result.text


def test_short_output_is_untouched() -> None:
    text = "warning: x\n" * ((MIN_CHARS - 1) // 11)
    result = compress(text)
    assert result.text == text and result.refs == {} and result.note == "short"


def test_output_that_already_shows_markers_is_compressed_with_them_folded() -> None:
    # A README about this compressor shows markers; it used to go out whole. Its own
    # marker-like lines are folded (never left where expanding would read them as ours),
    # and expanding puts back exactly the input.
    shown = "[… 3 lines omitted ref:k_AAAAAAAAAA]"
    text = fixture("ls_l.txt") + "\n" + shown + "\n"
    result = compress(text)
    assert result.chars_out < result.chars_in / 2
    assert "k_AAAAAAAAAA" not in result.text
    assert "k_AAAAAAAAAA" not in refs_in(result.text)
    assert expand(result.text, result.refs.__getitem__) == text


@pytest.mark.parametrize("name", ["readme.md.txt", "textwrap_py.txt"])
def test_a_document_or_source_showing_a_marker_round_trips(name: str) -> None:
    # inline markers in prose; code markers (comment lines) in source, whose content is
    # put back in the same single pass and never read for markers again
    lines = fixture(name).split("\n")
    lines.insert(len(lines) // 3, "# folded text reads like [… 9 lines ref:k_BBBBBBBBBB] here")
    text = "\n".join(lines)
    result = compress(text, command=FIXTURES[name])
    assert result.compressor == ("source" if name.endswith("py.txt") else "mixed")
    assert result.chars_out < result.chars_in
    assert "k_BBBBBBBBBB" not in result.text
    assert expand(result.text, result.refs.__getitem__) == text


def test_an_exception_sends_the_input_back_and_is_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(lines: list[str], context: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(engine_module, "compressor", lambda name: broken)
    text = fixture("ps.txt")
    with caplog.at_level(logging.ERROR):
        result = compress(text)
    assert result.text == text and result.refs == {} and result.note == "error: RuntimeError"
    assert "compression failed" in caplog.text


def test_a_result_that_would_not_round_trip_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    real = render  # as the engine looks it up

    def lossy(plan):
        text, refs = real(plan)
        return text, {ref: content + "x" for ref, content in refs.items()}

    monkeypatch.setattr(engine_module, "render", lossy)
    text = fixture("ls_l.txt")
    result = compress(text)
    assert result.text == text and result.note == "round trip failed"


def test_a_result_that_is_not_smaller_is_dropped() -> None:
    def word(seed: str) -> str:
        return "".join(chr(97 + b % 26) for b in hashlib.sha256(seed.encode()).digest()[:7])

    text = "".join(
        "the " + " and ".join(word(f"{i}.{k}") for k in range(2 + i % 5)) + " were here.\n"
        for i in range(40)
    )
    result = compress(text, command="cat notes.txt")
    assert result.text == text and result.refs == {}


@pytest.mark.slow
def test_same_input_same_bytes_in_two_fresh_processes() -> None:
    script = (
        "import hashlib, json, sys\n"
        "from plane.economy.compress import compress\n"
        "from tests.plane.compress.helpers import FIXTURES, fixture\n"
        "out = {}\n"
        "for name, command in sorted(FIXTURES.items()):\n"
        "    r = compress(fixture(name), command=command)\n"
        "    out[name] = hashlib.sha256((r.text + json.dumps(r.refs, sort_keys=True))"
        ".encode('utf-8', 'surrogatepass')).hexdigest()\n"
        "print(json.dumps(out))\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
            cwd=ROOT,
        ).stdout
        for seed in ("1", "2")
    ]
    assert json.loads(runs[0]) == json.loads(runs[1])
    assert len(json.loads(runs[0])) == len(FIXTURES)


_LINES = st.sampled_from(
    [
        "",
        "  ",
        "Setting up libfoo (1.2.3) ...",
        "error: cannot find -lfoo",
        "src/app.py:12: warning: unused import",
        "    at Object.<anonymous> (x.js:3:1)",
        '{"a": [1, 2, 3]}',
        "  1 | int main(void) {",
        "      |     ^~~~",
        "@@ -1,3 +1,4 @@",
        "+added line",
        "-removed line",
        " context line",
        "\r 45% [####    ]",
        "--",
        "-rw-r--r-- 1 root root 12 Jan  1 00:00 a.txt",
        "def f(x):",
        "    return x",
    ]
)


@settings(max_examples=examples(150), deadline=None)
@given(
    st.lists(st.one_of(_LINES, st.text(max_size=30)), min_size=1, max_size=200),
    st.sampled_from([None, "make", "git diff", "grep -rn x .", "ls -l", "cat a.py", "cat a.json"]),
)
def test_round_trip_property(lines: list[str], command: str | None) -> None:
    text = "\n".join(lines) * (1 + MIN_CHARS // max(1, len("\n".join(lines))))
    result = compress(text, command=command)
    assert expand(result.text, result.refs.__getitem__) == text
    assert len(result.text) <= len(text)
