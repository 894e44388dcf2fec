"""agents.yaml through the C parser: a fleet's file is read in C, every file
builds the same values and lines through either reader, and no file past a
bound reaches the C parser's builder (the Python reader refuses it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from plane import yaml_reader
from plane.config import load_config
from plane.errors import ConfigError
from tests.attack.test_config_table import TABLE, read_as

REPO = Path(__file__).parents[2]

SAMPLES = {
    "the shipped file": (REPO / "agents.yaml").read_text(),
    "a fleet": "defaults: {limitUsd: 5}\nagents:\n"
    + "".join(f"  agent-{n:04d}: {{limitUsd: 2}}\n" for n in range(300)),
    "anchors and merges": (
        "base: &base {model: m, limitUsd: 1.50, tools: [read_file, 'shell']}\n"
        "agents:\n"
        '  a: {<<: *base, role: "say \\"hi\\""}\n'
        "  b:\n"
        "    <<: *base\n"
        "    limitUsd: 2e-1\n"
        "    group: ~\n"
    ),
    "scalars of every kind": (
        "# a comment\n"
        "on: yes\noff: false\nnone: null\nint: 0x1f\noct: 0o17\nfloat: .5\nnan: .nan\n"
        "date: 2024-01-02\nwhen: 2024-01-02T03:04:05Z\nquoted: '07'\n"
        "folded: >\n  one\n  two\n"
        "literal: |-\n  one\n  two\n"
        "unicode: café ✓\n"
        "list:\n- a\n-   - b\n    - c\n- {d: [e, {f: g}]}\n"
    ),
    "document markers": "---\nagents:\n  x: 5\n...\n",
}


def lines(value: Any) -> Any:
    """Where each mapping and list is, and each of its keys and items, as
    the values' own structure (a merged key has no place of its own)."""
    if isinstance(value, CommentedMap):
        return (value.lc.line, value.lc.data, {k: lines(v) for k, v in value.items()})
    if isinstance(value, CommentedSeq):
        return (value.lc.line, value.lc.data, [lines(v) for v in value])
    return None


@pytest.mark.parametrize("name", list(SAMPLES))
def test_both_readers_build_the_same_values_on_the_same_lines(name):
    text = SAMPLES[name]
    assert yaml_reader.within_bounds(text)
    fast, careful = yaml_reader.read_in_c(text), yaml_reader.read_in_python(text, "agents.yaml")
    assert fast == careful
    assert lines(fast) == lines(careful)


def test_an_explicit_tag_is_read_by_the_python_reader_which_keeps_it():
    text = "agents: !!map\n  x: !!str 5\n"
    assert not yaml_reader.within_bounds(text)
    read = yaml_reader.document(text, "agents.yaml")
    assert repr(read) == repr(yaml_reader.read_in_python(text, "agents.yaml"))
    assert type(read["agents"]["x"]) is not str  # as written: a tagged value


@pytest.mark.parametrize("directive", ["%YAML 1.1", "%YAML 1.2", "%TAG !m! tag:example.com,2026:"])
def test_a_directive_is_read_by_the_python_reader_which_follows_it(directive):
    """`%YAML 1.1` makes `yes` true and `010` eight: the C parser's values
    would be read by YAML 1.2 whatever the file said."""
    text = f"{directive}\n---\nagents:\n  x: {{on: yes, count: 010}}\n"
    assert not yaml_reader.within_bounds(text)
    read = yaml_reader.document(text, "agents.yaml")
    assert read == yaml_reader.read_in_python(text, "agents.yaml")
    if directive == "%YAML 1.1":
        assert read["agents"]["x"] == {True: True, "count": 8}


def test_a_fleet_is_read_by_the_c_parser(tmp_path, monkeypatch):
    """10,000 agents are read without the Python scanner (five times the CPU)."""

    def python_reader(*_: object) -> None:
        raise AssertionError("read by the Python reader")

    monkeypatch.setattr(yaml_reader, "read_in_python", python_reader)
    path = tmp_path / "agents.yaml"
    agents = "".join(f"  agent-{n:06d}: {{}}\n" for n in range(10_000))
    path.write_text(f"defaults: {{limitUsd: 5}}\nagents:\n{agents}")
    assert len(load_config(path).agents) == 10_000


BOUNDS = [
    name
    for name in TABLE
    if "nesting" in name or "deep" in name or "tokens" in name or "bomb" in name
]


@pytest.mark.parametrize("name", BOUNDS)
def test_a_file_past_a_bound_is_never_built_by_the_c_parser(tmp_path, monkeypatch, name):
    """Deep or dense files are refused by the Python reader, with its line;
    an alias bomb is built unexpanded and refused by its count."""
    raw, expected = TABLE[name]
    said = read_as(name, monkeypatch)
    built: list[str] = []
    read_in_c = yaml_reader.read_in_c

    def spy(text: str) -> Any:
        built.append(text)
        return read_in_c(text)

    monkeypatch.setattr(yaml_reader, "read_in_c", spy)
    path = tmp_path / "agents.yaml"
    path.write_bytes(raw)
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert expected.format(path=path, **said) in str(refused.value)
    assert bool(built) == ("bomb" in name)


@pytest.mark.parametrize(
    "text",
    [
        "agents: [1\n",
        "agents:\n\tx: 1\n",
        "a: 1\na: 2\n",
        "a: *nowhere\n",
        "a: !!int many\n",
        "a: {<<: 3}\n",
        "a: 1\n---\nb: 2\n",
        "a: b: c\n",
    ],
)
def test_what_the_c_parser_cannot_read_gets_the_python_readers_sentence(text):
    with pytest.raises(ConfigError) as careful:
        yaml_reader.read_in_python(text, "agents.yaml")
    with pytest.raises(ConfigError) as read:
        yaml_reader.document(text, "agents.yaml")
    assert str(read.value) == str(careful.value)


def test_without_the_c_parser_the_python_reader_reads_the_same(monkeypatch):
    text = SAMPLES["a fleet"]
    read = yaml_reader.document(text, "agents.yaml")
    monkeypatch.setattr(yaml_reader, "CParser", None)
    assert yaml_reader.document(text, "agents.yaml") == read
