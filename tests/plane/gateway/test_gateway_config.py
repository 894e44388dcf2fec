"""The `gateway:` block of an agent in agents.yaml."""

from __future__ import annotations

import pytest

from plane.config import parse_config
from plane.errors import ConfigError

BASE = """
providers:
  up: {kind: anthropic, base_url: "http://127.0.0.1:9"}
agents:
  claude: {provider: up, gateway: %s}
"""


def test_a_gateway_block_makes_a_gateway_agent() -> None:
    config = parse_config(BASE % "{compress: true}")
    block = config.agents["claude"].gateway
    assert block is not None and block.compress is True
    block = parse_config(BASE % "{}").agents["claude"].gateway
    assert block is not None and block.compress is True


@pytest.mark.parametrize(
    ("block", "said"),
    [
        ("{compres: true}", "compres"),
        ("{compress: maybe}", "compress"),
        ("{}, ambient: {every_minutes: 5}", "a gateway agent takes no turns of its own"),
        ("{}, role: Be brief.", "agents.claude.role: a gateway agent's client sends its own"),
        ("{}, tools: [grep]", "agents.claude.tools: a gateway agent's client brings its own"),
        ("{}, tools: []", "agents.claude.tools: a gateway agent's client brings its own"),
    ],
)
def test_a_bad_gateway_block_is_refused_naming_its_line(block: str, said: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config(BASE % block)
    assert said in str(refused.value) and "line" in str(refused.value)
