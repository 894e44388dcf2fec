"""Broken agents.yaml files, each with the one line the plane must print.

Every file in TABLE goes through `load_config` (one `ConfigError`, one line,
naming the line or the key, in well under 2 s of CPU; a dense file with a
tenth of the tokens free, see `read_as`); SAMPLE goes through
the real `plane serve` as well: exit 1, that line on stderr and nothing
else, no traceback, within 2 s of Python's own start-up, and nothing left
behind (the plane's home is not even created).
"""

from __future__ import annotations

import os
import time

import pytest

from plane import yaml_reader
from plane.config import load_config
from plane.errors import ConfigError
from tests.support.command import plane_cli
from tests.support.cpu import REFUSAL_CPU_S

URL = "http://127.0.0.1:9/v1"
BOMB = b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + b"".join(
    f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]\n".encode()
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)
MAP_BOMB = b"a: &a {x: 1, y: 1, z: 1, w: 1}\n" + b"".join(
    f"{c}: &{c} {{x: *{p}, y: *{p}, z: *{p}, w: *{p}}}\n".encode()
    for p, c in zip("abcdefghijk", "bcdefghijkl", strict=True)
)
GOOD = b"defaults:\n  limitUsd: 5\nagents:\n  demo: {}\n"


def provider(block: str) -> bytes:
    return f"providers:\n  x: {{{block}}}\n".encode()


EMPTY = "{path}: the file is empty (no settings, only blank lines or comments), so it would set "
DEEP = "nested more than 32 levels deep (agents.yaml needs four); not read further."
URL_EXAMPLE = "like https://api.openai.com/v1."

TABLE: dict[str, tuple[bytes, str]] = {
    # nothing in it: every ceiling would silently go
    "empty": (b"", EMPTY),
    "comments only": (b"# agents\n# (none yet)\n", EMPTY),
    "blank lines": (b"\n\n   \n\t\n", EMPTY),
    "document marker only": (b"---\n...\n", EMPTY),
    "null document": (b"~\n", EMPTY),
    # not UTF-8 text
    "UTF-16 with BOM": (
        GOOD.decode().encode("utf-16"),
        "{path}: the file is UTF-16 text; save it as UTF-8.",
    ),
    "UTF-16 without BOM": (
        GOOD.decode().encode("utf-16-be"),
        "{path}: the file is UTF-16 text; save it as UTF-8.",
    ),
    "UTF-32": (
        GOOD.decode().encode("utf-32"),
        "{path}: the file is UTF-32 text; save it as UTF-8.",
    ),
    "PNG": (
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        "{path} line 3: a NUL byte; this is a binary file, not YAML.",
    ),
    "gzip": (
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00",
        "{path} line 1: a NUL byte; this is a binary file, not YAML.",
    ),
    "Windows-1252 quotes": (
        b"agents:\n  demo:\n    role: \x93be brief\x94\n",
        "{path} line 3: byte 0x93 is not UTF-8 text; save the file as UTF-8.",
    ),
    "Latin-1": (
        "defaults:\n  model: café\n".encode("latin-1"),
        "{path} line 2: byte 0xe9 is not UTF-8 text",
    ),
    "control character": (
        b"defaults:\n  model: a\x01b\n",
        "{path} line 2: not valid YAML (U+0001 is a control character; is this a binary file?).",
    ),
    "over 4 MiB": (b"# padding\n" * 420_000, "{path}: the file is over 4 MiB; not a config."),
    # costs that grow faster than the file
    "deep flow nesting": (b"defaults: " + b"[" * 50_000, "{path} line 1: " + DEEP),
    "deep block nesting": (
        b"".join(b" " * i + b"k:\n" for i in range(200)),
        "{path} line 33: " + DEEP,
    ),
    "deep compact lists": (b"- " * 5000 + b"x\n", "{path} line 1: " + DEEP),
    "alias bomb": (
        BOMB,
        "{path} line 5: e: its aliases expand it to more than 50,342 values, far more than its "
        "342 characters write out.",
    ),
    "alias bomb of mappings": (
        MAP_BOMB,
        "line 8: h: its aliases expand it to more than 50,416 values",
    ),
    "alias bomb in a 1 MiB file": (
        b"# padding\n" * 100_000 + BOMB,
        "line 100007: g: its aliases expand it to more than 1,050,342 values",
    ),
    "too many tokens": (
        b"pricing: [" + b"1," * 20_000 + b"]\n",
        "{path} line 1: {dense}; not read further.",
    ),
    "too many tokens in a 3 MiB file": (
        b"pricing: [" + b"1," * 1_500_000 + b"]\n",
        "{path} line 1: {dense}",
    ),
    # not YAML
    "unclosed bracket": (b"defaults: [1\n", "{path} line 2: not valid YAML ("),
    "tab indentation": (
        b"defaults:\n\tlimitUsd: 5\n",
        "{path} line 2: not valid YAML (found character '\\t' that cannot start any token).",
    ),
    "duplicate key": (
        b"defaults:\n  limitUsd: 5\n  limitUsd: 50\n",
        "{path} line 3: "
        'not valid YAML (found duplicate key "limitUsd" with value "50" (original value: "5")).',
    ),
    "two documents": (
        GOOD + b"---\n" + GOOD,
        "{path} line 5: "
        "not valid YAML (expected a single document in the stream, but found another document).",
    ),
    "undefined alias": (
        b"defaults:\n  limitUsd: *five\n",
        "{path} line 2: not valid YAML (found undefined alias 'five').",
    ),
    "merge of a scalar": (
        b"defaults: {<<: 3}\n",
        "{path} line 1: "
        "not valid YAML (expected a mapping or list of mappings for merging, but found scalar).",
    ),
    "bad !!int": (
        b"defaults:\n  max_calls_per_turn: !!int many\n",
        "{path} line 2: not valid YAML (cannot read 'many' as a whole number).",
    ),
    "5,000-digit number": (
        b"defaults:\n  limitUsd: " + b"9" * 5000 + b"\n",
        "{path} line 2: not valid YAML (cannot read '99999999999999999999…' as a whole number).",
    ),
    "bad !!binary": (
        b"defaults:\n  model: !!binary ZZZ\n",
        "{path} line 2: not valid YAML (failed to decode base64 data",
    ),
    # the wrong shape
    "top-level list": (b"- demo\n- scout\n", "{path}: the top level must be a mapping of keys."),
    "top-level scalar": (
        b"limitUsd: 5\n"[:8] + b"\n",
        "{path}: the top level must be a mapping of keys.",
    ),
    "unknown top-level key": (
        b"agent:\n  demo: {}\n",
        "{path} line 1: agent: unknown key (did you mean agents?).",
    ),
    "misspelt limitUsd": (
        b"agents:\n  demo:\n    limitusd: 2\n",
        "{path} line 3: agents.demo.limitusd: unknown key (did you mean limitUsd?).",
    ),
    "complex key": (b"? [a, b]\n: 1\n", "unknown key (the keys here are defaults, providers,"),
    # money
    "negative ceiling": (
        b"defaults:\n  limitUsd: -1\n",
        "{path} line 2: defaults.limitUsd: a dollar amount of 0 or more, like 5 or 0.50; got -1.",
    ),
    "ceiling in words": (
        b"defaults:\n  limitUsd: five\n",
        '{path} line 2: defaults.limitUsd: a dollar amount, like 5 or 0.50; got "five".',
    ),
    "NaN ceiling": (
        b"defaults:\n  limitUsd: .nan\n",
        "{path} line 2: defaults.limitUsd: a finite dollar amount, like 5 or 0.50; got .nan.",
    ),
    "infinite ceiling": (
        b"defaults:\n  limitUsd: .inf\n",
        "{path} line 2: defaults.limitUsd: a finite dollar amount, like 5 or 0.50; got .inf.",
    ),
    "sub-micro-dollar ceiling": (
        b"defaults:\n  limitUsd: 0.0000001\n",
        "{path} line 2: defaults.limitUsd: a dollar amount with at most 6 decimals; got 0.0000001.",
    ),
    "agent above the default": (
        b"defaults:\n  limitUsd: 5\nagents:\n  demo:\n    limitUsd: 7\n",
        "{path} line 5: "
        "agents.demo.limitUsd: $7.00 is above defaults.limitUsd $5.00; an agent's own block can "
        "only narrow the default.",
    ),
    "price without output": (
        b"pricing:\n  m: {input: 1}\n",
        "{path} line 2: pricing.m.output: missing; this block needs it.",
    ),
    "empty price key": (
        b'pricing:\n  "": {input: 0, output: 0}\n',
        "{path} line 1: pricing: the model name '' would match, and price, every model.",
    ),
    "warnRatio above 1": (
        b"defaults:\n  warnRatio: 2\n",
        "{path} line 2: defaults.warnRatio: a number of at most 1; got 2.",
    ),
    "zero calls per turn": (
        b"defaults:\n  max_calls_per_turn: 0\n",
        "{path} line 2: defaults.max_calls_per_turn: a whole number of 1 or more; got 0.",
    ),
    # providers
    "base_url with ftp": (
        provider("kind: openai-compatible, base_url: 'ftp://h/v1'"),
        "{path} line 2: providers.x.base_url: must start with http:// or https://, " + URL_EXAMPLE,
    ),
    "base_url without scheme": (
        provider("kind: openai-compatible, base_url: api.openai.com/v1"),
        "providers.x.base_url: must start with http:// or https://",
    ),
    "base_url without host": (
        provider("kind: openai-compatible, base_url: 'https://'"),
        "{path} line 2: providers.x.base_url: has no host, " + URL_EXAMPLE,
    ),
    "base_url with a space": (
        provider("kind: openai-compatible, base_url: 'http://a b/v1'"),
        "{path} line 2: providers.x.base_url: must be a URL without spaces or control characters, "
        + URL_EXAMPLE,
    ),
    "base_url with a password": (
        provider("kind: openai-compatible, base_url: 'https://me:sk-1@h/v1'"),
        "{path} line 2: "
        "providers.x.base_url: must not carry a user or password; put the key in api_key_env's "
        "variable.",
    ),
    "base_url with a bad port": (
        provider("kind: openai-compatible, base_url: 'http://h:99999/v1'"),
        "{path} line 2: providers.x.base_url: is not a valid URL (port out of range 0-65535), "
        + URL_EXAMPLE,
    ),
    "base_url a list": (
        provider("kind: openai-compatible, base_url: [a]"),
        '{path} line 2: providers.x.base_url: text; got ["a"].',
    ),
    "no base_url": (
        provider("kind: openai-compatible"),
        "{path} line 2: providers.x: an openai-compatible provider needs a base_url.",
    ),
    "unknown kind": (
        provider(f"kind: openai, base_url: '{URL}'"),
        "{path} line 2: providers.x.kind: one of openai-compatible, anthropic or embedded; "
        'got "openai" (did you mean openai-compatible?).',
    ),
    "the key itself in api_key_env": (
        provider("kind: anthropic, api_key_env: sk-ant-api03-abc"),
        "{path} line 2: "
        "providers.x.api_key_env: must be the name of an environment variable, like "
        "OPENAI_API_KEY (the key itself never goes in this file).",
    ),
    "unknown default provider": (
        b"defaults:\n  provider: openai\n",
        "{path} line 2: defaults.provider: is not one of the providers.",
    ),
    # agents
    "misspelt tool": (
        b"agents:\n  demo:\n    tools: [read_file, read_flie]\n",
        "{path} line 3: "
        "agents.demo.tools.1: 'read_flie' is not a tool (did you mean read_file? the tools are "
        "run_command, read_file,",
    ),
    "unknown tool": (
        b"agents:\n  demo:\n    tools:\n      - fly\n",
        "{path} line 4: agents.demo.tools.0: 'fly' is not a tool (the tools are run_command,",
    ),
    "tools not a list": (
        b"agents:\n  demo:\n    tools: read_file\n",
        "{path} line 3: agents.demo.tools: a list of tool names, like [read_file, run_command]; "
        'got "read_file".',
    ),
    "bad agent name": (
        b"agents:\n  Demo!: {}\n",
        "{path} line 2: agents.Demo!: not a valid agent name",
    ),
    "unknown agent provider": (
        b"agents:\n  demo:\n    provider: nope\n",
        "{path} line 3: agents.demo.provider: is not one of the providers.",
    ),
    "another model on the embedded one": (
        b"agents:\n  demo:\n    model: claude-haiku-4-5\n",
        "{path} line 3: agents.demo.model: 'claude-haiku-4-5' would run on the embedded "
        "model (smollm2-135m), which answers as itself whatever it is called",
    ),
    "a default model on the embedded one": (
        b"defaults:\n  model: gpt-5\n",
        "{path} line 2: defaults.model: 'gpt-5' would run on the embedded model",
    ),
    "ambient every 0 minutes": (
        b"agents:\n  demo:\n    ambient: {every_minutes: 0}\n",
        "{path} line 3: agents.demo.ambient.every_minutes: a whole number of 1 or more; got 0.",
    ),
    # a value of the wrong kind: what the key takes, in the plane's words
    "group's agents not a list": (
        b"groups:\n  g:\n    agents: scout\n",
        '{path} line 3: groups.g.agents: a list of agent names, like [scout, poet]; got "scout".',
    ),
    "an agent's key under defaults": (
        b"defaults:\n  tools: [read_file]\n",
        "{path} line 2: defaults.tools: unknown key (the keys here are limitUsd, warnRatio, "
        "model, provider, max_calls_per_turn, max_output_tokens, mcp, guard, fallback).",
    ),
    "a number for a model": (
        b"defaults:\n  model: 5\n",
        '{path} line 2: defaults.model: text; got 5 (write "5" for the text).',
    ),
    "sandbox maybe": (b"sandbox: maybe\n", '{path} line 1: sandbox: true or false; got "maybe".'),
    "guard enabled maybe": (
        b"agents:\n  demo:\n    guard: {enabled: maybe}\n",
        '{path} line 3: agents.demo.guard.enabled: true or false; got "maybe".',
    ),
    "half a call per turn": (
        b"defaults:\n  max_calls_per_turn: 2.5\n",
        "{path} line 2: defaults.max_calls_per_turn: a whole number; got 2.5.",
    ),
    "compact_min_chars in words": (
        b"session:\n  compact_min_chars: lots\n",
        '{path} line 2: session.compact_min_chars: a whole number; got "lots".',
    ),
    "warnRatio in words": (
        b"defaults:\n  warnRatio: high\n",
        '{path} line 2: defaults.warnRatio: a number; got "high".',
    ),
    "zero warnRatio": (
        b"defaults:\n  warnRatio: 0\n",
        "{path} line 2: defaults.warnRatio: a number above 0; got 0.",
    ),
    "ceiling above a million": (
        b"fleet:\n  limitUsd: 2000000\n",
        "{path} line 2: fleet.limitUsd: a dollar amount of at most 1,000,000, like 5 or 0.50; "
        "got 2000000.",
    ),
    "a raise of nothing": (
        b"notify:\n  ntfy: https://ntfy.sh/t\n  raise_usd: 0\n",
        "{path} line 3: notify.raise_usd: a dollar amount above 0, like 5 or 0.50; got 0.",
    ),
    "notify on nothing": (
        b"notify:\n  ntfy: https://ntfy.sh/t\n  on: []\n",
        "{path} line 3: notify.on: at least 1 entry; got none.",
    ),
    "notify on an unknown moment": (
        b"notify:\n  ntfy: https://ntfy.sh/t\n  on: [amber, hold]\n",
        "{path} line 3: notify.on.1: one of amber, held, resumed, ask_refused, spike, loop or "
        'tag; got "hold" (did you mean held?).',
    ),
    "unknown tool_mode": (
        provider("kind: anthropic, tool_mode: jsonschema"),
        "{path} line 2: providers.x.tool_mode: one of native or json_schema; "
        'got "jsonschema" (did you mean json_schema?).',
    ),
    "provider without kind": (
        provider(f"base_url: '{URL}'"),
        "{path} line 2: providers.x.kind: missing; this block needs it.",
    ),
    "retries past ten": (
        b"notify:\n  ntfy: https://ntfy.sh/t\n  retries: 99\n",
        "{path} line 3: notify.retries: a whole number of at most 10; got 99.",
    ),
    "empty MCP command": (
        b"agents:\n  demo:\n    mcp: {servers: {time: {command: ''}}}\n",
        "{path} line 3: agents.demo.mcp.servers.time.command: "
        'text of at least 1 character; got "".',
    ),
    "workspace a list": (
        b"agents:\n  demo:\n    workspace: [a]\n",
        '{path} line 3: agents.demo.workspace: a path, like /srv/work; got ["a"].',
    ),
    "role a list": (
        b"agents:\n  demo:\n    role: [be, brief]\n",
        '{path} line 3: agents.demo.role: text; got ["be", "brief"].',
    ),
    "env not a block": (
        b"agents:\n  demo:\n    mcp: {servers: {time: {command: x, env: A=1}}}\n",
        "{path} line 3: agents.demo.mcp.servers.time.env: a block of keys ({{key: value, …}}); "
        'got "A=1".',
    ),
    "1,001 tags": (
        b"tags:\n" + b"".join(b"  t%d: {}\n" % i for i in range(1001)),
        "{path} line 1: tags: at most 1,000 entries; got 1,001.",
    ),
    "lone surrogate in a role": (
        b'agents:\n  demo:\n    role: "\\ud800"\n',
        "{path} line 3: "
        "agents.demo.role: a string with a lone surrogate (\\ud800–\\udfff), which is not text.",
    ),
}

DENSE = {
    10_000: "30,009 keys, values and brackets in its first 30,013 characters, denser than any "
    "agents.yaml (two every three characters past the first 10,000)",
    1_000: "3,009 keys, values and brackets in its first 3,013 characters, denser than any "
    "agents.yaml (two every three characters past the first 1,000)",
}
"""What a "too many tokens" file is refused with, by the tokens free in any file
(`yaml_reader.FREE_TOKENS`): crossed at the same place whatever the file's size."""
FEWER_FREE_TOKENS = 1_000
"""The free tokens a dense file is read with in process (`read_as`): the same bound,
crossed after a tenth of the tokens, the Python reader's ~20 µs each being the whole
cost of the refusal. `plane serve` reads one at the shipped 10,000."""


def read_as(name: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Lower the free tokens for a dense case; what its expected line is formatted with."""
    if "tokens" in name:
        monkeypatch.setattr(yaml_reader, "FREE_TOKENS", FEWER_FREE_TOKENS)
    return {"dense": DENSE[yaml_reader.FREE_TOKENS]}


SAMPLE = [
    "empty",
    "comments only",
    "UTF-16 with BOM",
    "PNG",
    "deep flow nesting",
    "alias bomb",
    "too many tokens",
    "duplicate key",
    "base_url without host",
    "misspelt tool",
    "agent above the default",
]


def test_the_table_is_large_enough():
    assert len(TABLE) >= 40
    assert set(SAMPLE) <= set(TABLE)


@pytest.mark.parametrize("name", list(TABLE))
def test_a_broken_file_is_one_line(tmp_path, name, monkeypatch):
    raw, expected = TABLE[name]
    said = read_as(name, monkeypatch)
    path = tmp_path / "agents.yaml"
    path.write_bytes(raw)
    started = time.process_time()
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert time.process_time() - started < 2
    line = str(refused.value)
    assert "\n" not in line and len(line) < 400
    assert expected.format(path=path, **said) in line


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("a directory", lambda p: p.mkdir()),
        ("a FIFO", lambda p: os.mkfifo(p)),
        ("missing", lambda p: None),
    ],
)
def test_a_config_that_is_not_a_file_is_one_line(tmp_path, name, make):
    path = tmp_path / "agents.yaml"
    make(path)
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    expected = {
        "a directory": f"Cannot read {path}: it is a directory, not a file.",
        "a FIFO": f"Cannot read {path}: it is not a regular file.",
        "missing": f"Cannot read {path}: No such file or directory.",
    }[name]
    assert str(refused.value) == expected


@pytest.mark.parametrize("name", SAMPLE)
def test_plane_serve_refuses_a_broken_file_in_one_line(tmp_path, name):
    raw, expected = TABLE[name]
    path = tmp_path / "agents.yaml"
    path.write_bytes(raw)
    home = tmp_path / "home"
    cpu = time.process_time()
    result = plane_cli(home, "serve", "--config", str(path))
    assert time.process_time() - cpu < REFUSAL_CPU_S, f"worked over {REFUSAL_CPU_S} CPU seconds"
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    said = {"dense": DENSE[yaml_reader.FREE_TOKENS]}  # the shipped cap
    assert line.startswith("plane: ") and expected.format(path=path, **said) in line
    assert not home.exists()  # no socket, no lock, no database: nothing was made
    assert result.stdout == ""


def test_the_plane_started_with_no_command_reports_the_broken_file(tmp_path):
    (tmp_path / "agents.yaml").write_bytes(b"# everything commented out\n")
    result = plane_cli(tmp_path / "home", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "plane: The plane did not start: agents.yaml: the file is empty (no settings, only "
        "blank lines or comments), so it would set no ceiling; write the settings in it, or "
        "remove it to run on the built-in defaults."
    )
    assert not (tmp_path / "home" / "plane.sock").exists()
