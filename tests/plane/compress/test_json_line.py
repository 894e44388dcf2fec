"""JSON printed on one line (`pip list --format=json`, `json.dumps`): sampled inside the line.

A fold of whole lines cannot touch a one-line document, so such output went
out whole. Its containers are now read from brackets and commas outside
strings, and sampled as printed JSON is: first items, the last, every new
shape; the runs between fold inline, the marker counting the values.
"""

from __future__ import annotations

import json
import re

from plane.economy.compress import compress
from plane.economy.compress.formats import jsonline
from tests.plane.compress.helpers import fixture, round_trips

_VALUES = re.compile(r"\[… (\d+) more values ref:k_[\w-]{10}\]")


def _pip_list() -> tuple[list[dict[str, str]], str]:
    """`pip list --format=json` as pip prints it: one line, json.dumps' separators."""
    records = json.loads(fixture("pip_list.json.txt"))
    return records, json.dumps(records) + "\n"


def test_a_one_line_array_keeps_its_first_and_last_records_and_counts_the_rest() -> None:
    records, text = _pip_list()
    assert text.count("\n") == 1 and len(records) > 40
    result = compress(text, command="pip list --format=json")
    assert result.compressor == "json"
    assert 1 - result.chars_out / result.chars_in > 0.8
    for record in (*records[: jsonline.HEAD], records[-1]):
        assert json.dumps(record) in result.text  # kept records are the line's own bytes
    counted = sum(int(n) for n in _VALUES.findall(result.text))
    shown = sum(1 for record in records if json.dumps(record) in result.text)
    assert counted + shown == len(records)
    assert round_trips(text, result)


def test_a_record_of_a_new_shape_in_the_middle_stays() -> None:
    records, _ = _pip_list()
    odd = {"name": "editable-pkg", "version": "0.1", "editable_project_location": "/src/pkg"}
    records.insert(len(records) // 2, odd)
    text = json.dumps(records)
    result = compress(text)
    assert _VALUES.search(result.text)  # the records around it folded
    assert json.dumps(odd) in result.text
    assert round_trips(text, result)


def test_nested_containers_are_sampled_in_turn() -> None:
    records, _ = _pip_list()
    text = json.dumps({"installed": records, "outdated": records[:5], "count": len(records)})
    result = compress(text)
    assert '"outdated": ' + json.dumps(records[:5]) in result.text  # short: kept whole
    assert '"count": ' + str(len(records)) in result.text
    assert _VALUES.search(result.text)
    assert round_trips(text, result)


def test_a_line_cut_short_is_sampled_up_to_the_cut() -> None:
    _, text = _pip_list()
    cut = text[: len(text) * 2 // 3]  # `| head -c`: no closing bracket, a record cut in two
    result = compress(cut, command="head -c 3000 packages.json")
    assert result.compressor == "json"
    assert _VALUES.search(result.text)
    assert result.text.endswith(cut[cut.rindex("{") :])  # the cut record: the last item
    assert round_trips(cut, result)


def test_a_line_that_is_not_one_json_value_is_left_to_the_others() -> None:
    _, text = _pip_list()
    line = text.rstrip("\n")
    assert jsonline.inline(0, line) is not None
    assert jsonline.inline(0, line + " trailing words") is None
    assert jsonline.inline(0, "warning: " + line) is None
    assert jsonline.inline(0, line.replace("}]", "}}", 1)[:-1] + "}") is None  # `[ … }`
