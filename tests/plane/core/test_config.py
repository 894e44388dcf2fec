"""agents.yaml: a bad file says what and where, once, and nothing starts."""

from decimal import Decimal
from pathlib import Path

import pytest

from plane.config import EMBEDDED, load_config, parse_config
from plane.errors import ConfigError

REPO = Path(__file__).parents[3]


def test_the_shipped_file_runs_demo_and_scout_on_the_embedded_model_with_a_notional_price():
    config = load_config(REPO / "agents.yaml")
    assert set(config.agents) == {"demo", "scout"}
    assert config.defaults.provider == EMBEDDED
    assert config.ceiling_of(config.agents["demo"]) == Decimal(2)
    assert config.ceiling_of(config.agents["scout"]) == Decimal(5)
    assert "smollm2" in config.pricing
    assert "NOTIONAL" in (REPO / "agents.yaml").read_text()


def test_no_file_means_the_embedded_model_and_no_ceiling():
    config = load_config(None)
    assert config.defaults.limit_usd is None
    assert EMBEDDED in config.providers


def test_prices_from_yaml_are_exact_decimals():
    config = parse_config("pricing:\n  m: {input: 0.1, output: 0.3}\n")
    assert config.pricing["m"].input == Decimal("0.1")
    assert config.pricing["m"].output == Decimal("0.3")


def test_zero_is_a_real_ceiling_not_unlimited():
    config = parse_config("defaults:\n  limitUsd: 0\nagents:\n  a: {}\n")
    assert config.ceiling_of(config.agents["a"]) == Decimal(0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "defaults:\n  limitUsd: 5\nagents:\n  demo:\n    limitUsd: 7\n",
            "agents.yaml line 5: agents.demo.limitUsd: $7.00 is above defaults.limitUsd $5.00; "
            "an agent's own block can only narrow the default.",
        ),
        ("defaults:\n  limitUsd: -1\n", "line 2: defaults.limitUsd: Input should be greater"),
        ("agents:\n  demo:\n    limitusd: 2\n", "line 3: agents.demo.limitusd: unknown key."),
        ("defaults: [1\n", "not valid YAML"),
        ("agents:\n  Demo!: {}\n", "line 2: agents.Demo!: not a valid agent name"),
        ("defaults:\n  warnRatio: 2\n", "line 2: defaults.warnRatio: Input should be less"),
        ("pricing:\n  x: {input: 1}\n", "line 2: pricing.x.output: Field required."),
        ("agents:\n  a:\n    provider: nope\n", "line 3: agents.a.provider: is not one of"),
        ("- a\n- b\n", "the top level must be a mapping"),
        ("defaults:\n  limitUsd: .nan\n", "defaults.limitUsd"),
        ("providers:\n  x: {kind: openai-compatible}\n", "needs a base_url"),
    ],
)
def test_a_bad_file_names_the_key_the_line_and_the_problem(text, expected):
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_unreadable_file_is_one_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="Cannot read"):
        load_config(tmp_path / "missing.yaml")
