"""agents.yaml's errors are in the plane's words: whatever wrong value a key
is given, the line says what the key takes, never the validator's phrases
("Input should be a valid list", "type=…", a link to its documentation)."""

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plane.config import (
    AgentConfig,
    AmbientConfig,
    BurnConfig,
    CompressionConfig,
    Config,
    Defaults,
    FallbackConfig,
    FleetConfig,
    GatewayConfig,
    GroupConfig,
    GuardConfig,
    McpServerConfig,
    NotifyConfig,
    Price,
    ProviderConfig,
    RepoMapConfig,
    SessionConfig,
    TagConfig,
    parse_config,
)
from plane.errors import ConfigError
from tests.support.fixtures_examples import examples

VALIDATOR_PHRASES = ("Input should", "input should", "validation error", "type=", "For further")

PLACES: dict[str, tuple[Any, tuple[str, ...], dict[str, Any]]] = {
    "top": (Config, (), {}),
    "defaults": (Defaults, ("defaults",), {}),
    "agent": (AgentConfig, ("agents", "demo"), {}),
    "guard": (GuardConfig, ("defaults", "guard"), {}),
    "fallback": (FallbackConfig, ("defaults", "fallback"), {"at": 0.5, "model": "m"}),
    "ambient": (AmbientConfig, ("agents", "demo", "ambient"), {"every_minutes": 5}),
    "gateway": (GatewayConfig, ("agents", "demo", "gateway"), {}),
    "mcp server": (McpServerConfig, ("agents", "demo", "mcp", "servers", "s"), {"command": "x"}),
    "provider": (ProviderConfig, ("providers", "x"), {"kind": "anthropic"}),
    "price": (Price, ("pricing", "m"), {"input": 1, "output": 1}),
    "session": (SessionConfig, ("session",), {}),
    "repo_map": (RepoMapConfig, ("repo_map",), {}),
    "compression": (CompressionConfig, ("compression",), {}),
    "notify": (NotifyConfig, ("notify",), {"ntfy": "https://ntfy.sh/t"}),
    "burn": (BurnConfig, ("burn",), {}),
    "fleet": (FleetConfig, ("fleet",), {}),
    "group": (GroupConfig, ("groups", "g"), {}),
    "tag": (TagConfig, ("tags", "t"), {}),
}
"""Each block of the file, where it sits, and the keys it needs to be read at all."""

KEYS = [
    (place, field.alias or name)
    for place, (block, _, _) in PLACES.items()
    for name, field in block.model_fields.items()
]

NAN = "@nan@"
WRONG: list[Any] = ["five", "", -1, 0, 2.5, 10**12, True, None, [1], {"a": 1}, NAN, "x" * 5000]
"""Values no key takes all of: words, numbers out of range, a list, a block, NaN."""


def yaml_with(place: str, key: str, value: Any) -> str:
    """agents.yaml (as JSON, which YAML reads) with `key` of `place` set to `value`."""
    _, path, needs = PLACES[place]
    document: dict[str, Any] = {**needs, key: value}
    for part in reversed(path):
        document = {part: document}
    return json.dumps(document).replace(f'"{NAN}"', ".nan")


def refusal(text: str) -> str | None:
    try:
        parse_config(text)
    except ConfigError as refused:
        return str(refused)
    return None


def in_plane_words(line: str | None) -> bool:
    return line is None or not any(phrase in line for phrase in VALIDATOR_PHRASES)


def test_every_key_given_each_wrong_value_is_refused_in_the_planes_words():
    said = {
        (place, key, repr(value)[:20]): refusal(yaml_with(place, key, value))
        for place, key in KEYS
        for value in WRONG
    }
    leaks = {case: line for case, line in said.items() if not in_plane_words(line)}
    assert leaks == {}
    assert sum(line is not None for line in said.values()) > len(said) / 2  # refused, mostly


yaml_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
    | st.just(NAN),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)


@pytest.mark.slow
@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(KEYS), yaml_values)
def test_a_generated_wrong_value_is_refused_in_the_planes_words(key, value):
    place, name = key
    if isinstance(value, float) and math.isinf(value):
        value = NAN  # JSON has no infinity; YAML's .nan stands for the numbers that are none
    assert in_plane_words(refusal(yaml_with(place, name, value)))


@pytest.mark.parametrize(
    ("place", "key", "value", "expected"),
    [
        ("group", "agents", "scout", 'a list of agent names, like [scout, poet]; got "scout".'),
        ("defaults", "limitUsd", -1, "a dollar amount of 0 or more, like 5 or 0.50; got -1."),
        ("provider", "kind", "openai", 'got "openai" (did you mean openai-compatible?).'),
        ("defaults", "tools", ["read_file"], "unknown key (the keys here are limitUsd, warnRatio,"),
    ],
)
def test_the_line_says_what_the_key_takes_and_what_it_got(place, key, value, expected):
    assert expected in (refusal(yaml_with(place, key, value)) or "")
