"""agents.yaml: a bad file says what and where, once, and nothing starts."""

import time
from decimal import Decimal
from pathlib import Path

import pytest

from plane.config import EMBEDDED, load_config, parse_config
from plane.errors import ConfigError
from plane.tools.registry import TOOLS

REPO = Path(__file__).parents[2]


def test_the_shipped_file_runs_demo_and_scout_on_the_embedded_model_with_a_notional_price():
    config = load_config(REPO / "agents.yaml")
    assert set(config.agents) == {"demo", "scout"}
    assert config.defaults.provider == EMBEDDED
    assert config.ceiling_of(config.agents["demo"]) == Decimal(2)
    assert config.ceiling_of(config.agents["scout"]) == Decimal(5)
    assert "smollm2" in config.pricing
    assert "NOTIONAL" in (REPO / "agents.yaml").read_text()


def test_the_shipped_file_promises_no_scene_its_model_does_not_play():
    """It once said `tools: [budget_status, set_own_limit]` would show the
    embedded model ask for a higher ceiling and be refused; SmolLM2 writes
    `/limit {1.5}` as text and never calls the tool. No comment offers a
    tool list to try on it."""
    text = (REPO / "agents.yaml").read_text()
    comments = [line.split("#", 1)[1] for line in text.splitlines() if "#" in line]
    assert not [c for c in comments if "to watch it" in c or "Try `tools:" in c]
    assert "never calls the tool" in text


def test_no_file_means_the_embedded_model_and_no_ceiling():
    config = load_config(None)
    assert config.defaults.limit_usd is None
    assert EMBEDDED in config.providers


def test_prices_from_yaml_are_exact_decimals():
    config = parse_config("pricing:\n  m: {input: 0.1, output: 0.3}\n")
    assert config.pricing["m"].input == Decimal("0.1")
    assert config.pricing["m"].output == Decimal("0.3")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("defaults:\n  limitUsd: 0.001\n", "defaults.limitUsd"),
        ("defaults:\n  limitUsd: 5\nagents:\n  a: {limitUsd: 0.004}\n", "agents.a.limitUsd"),
        ("fleet:\n  limitUsd: 49.999\n", "fleet.limitUsd"),
    ],
)
def test_a_ceiling_is_in_dollars_and_cents_as_limit_takes_it(text, key):
    """A ceiling of $0.001 read `$0 of $0.00` (a pause, by its figure) and
    /limit refuses it: the file refuses it too, in /limit's words, with an
    example in the file's terms (no `/limit`, no `off`)."""
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    assert f"{key}: " in str(caught.value)
    assert str(caught.value).endswith(
        " has more than two decimals; a limit is in dollars and cents, like 5 or 0.50."
    )


def test_zero_is_a_real_ceiling_not_unlimited():
    config = parse_config("defaults:\n  limitUsd: 0\nagents:\n  a: {}\n")
    assert config.ceiling_of(config.agents["a"]) == Decimal(0)


@pytest.mark.parametrize("zero", ["-0", "-0.0", "-0.00", "-.0"])
def test_a_negative_zero_ceiling_is_zero(zero):
    """A negative zero is zero: a real ceiling of zero, said `$0.00`, never
    `$-0.00` (nor refused as negative)."""
    config = parse_config(f"defaults:\n  limitUsd: {zero}\nagents:\n  a: {{limitUsd: {zero}}}\n")
    for ceiling in (config.defaults.limit_usd, config.ceiling_of(config.agents["a"])):
        assert ceiling == 0 and not ceiling.is_signed() and f"${ceiling:.2f}" == "$0.00"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "defaults:\n  limitUsd: 5\nagents:\n  demo:\n    limitUsd: 7\n",
            "agents.yaml line 5: agents.demo.limitUsd: $7.00 is above defaults.limitUsd $5.00; "
            "an agent's own block can only narrow the default.",
        ),
        (
            "defaults:\n  limitUsd: -1\n",
            "line 2: defaults.limitUsd: a dollar amount of 0 or more, like 5 or 0.50; got -1.",
        ),
        (
            "agents:\n  demo:\n    limitusd: 2\n",
            "line 3: agents.demo.limitusd: unknown key (did you mean limitUsd?).",
        ),
        ("defaults: [1\n", "not valid YAML"),
        (
            "agents:\n  a: {fallback: {at: 1.5, model: m}}\n",
            "line 2: agents.a.fallback.at: a number below 1; got 1.5.",
        ),
        (
            "agents:\n  a:\n    fallback: {at: 0.5}\n",
            "line 3: agents.a.fallback.model: missing; this block needs it.",
        ),
        (
            "agents:\n  a:\n    fallback: {at: 0.5, model: m, modle: n}\n",
            "line 3: agents.a.fallback.modle: unknown key (did you mean model?).",
        ),
        (
            "agents:\n  a:\n    fallback: maybe\n",
            "line 3: agents.a.fallback: should be a block of keys ({key: value, …}), or off.",
        ),
        (
            "agents:\n  a:\n    guard: maybe\n",
            "line 3: agents.a.guard: should be a block of keys ({key: value, …}), or off.",
        ),
        (
            "defaults:\n  guard: 2\n",
            "line 2: defaults.guard: should be a block of keys ({key: value, …}), or off.",
        ),
        (
            "defaults:\n  fallback: [m]\n",
            "line 2: defaults.fallback: should be a block of keys ({key: value, …}), or off.",
        ),
        (
            "agents:\n  a:\n    ambient: hourly\n",
            "line 3: agents.a.ambient: should be a block of keys ({key: value, …}).",
        ),
        ("agents:\n  Demo!: {}\n", "line 2: agents.Demo!: not a valid agent name"),
        (
            "defaults:\n  warnRatio: 2\n",
            "line 2: defaults.warnRatio: a number of at most 1; got 2.",
        ),
        ("pricing:\n  x: {input: 1}\n", "line 2: pricing.x.output: missing; this block needs it."),
        ("agents:\n  a:\n    provider: nope\n", "line 3: agents.a.provider: is not one of"),
        ("agents:\n  a:\n    model: ''\n", "line 3: agents.a.model: is empty; leave it out"),
        # A key written as a number or null is still found on its line.
        ("agents: {}\n1: 2\n", "agents.yaml line 2: 1: unknown key (the keys here are defaults,"),
        (
            "agents:\n  demo:\n    ~: 1\n",
            "agents.yaml line 3: agents.demo.None: unknown key (the keys here are limitUsd,",
        ),
        (
            "agents:\n  7: {limitUsd: -1}\n",
            "line 2: agents.7.limitUsd: a dollar amount of 0 or more",
        ),
        ("- a\n- b\n", "the top level must be a mapping"),
        ("defaults:\n  limitUsd: .nan\n", "defaults.limitUsd"),
        ("providers:\n  x: {kind: openai-compatible}\n", "needs a base_url"),
        # A ttl no clock can add to now: refused here, not a crash when the store opens.
        (
            "compression:\n  ttl_seconds: 1" + "0" * 400 + "\n",
            "line 2: compression.ttl_seconds: a whole number of at most 315,360,000; "
            "got 10000000000000000000….",
        ),
    ],
)
def test_a_bad_file_names_the_key_the_line_and_the_problem(text, expected):
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "agents:\n  demo:\n    limitUSD: 2\n",
            "line 3: agents.demo.limitUSD: unknown key (did you mean limitUsd?).",
        ),
        (
            "agents:\n  demo:\n    limit: 2\n",
            "line 3: agents.demo.limit: unknown key (did you mean limitUsd?).",
        ),
        (
            "defaults:\n  warnratio: 0.5\n",
            "line 2: defaults.warnratio: unknown key (did you mean warnRatio?).",
        ),
        (
            "defaults:\n  max_calls_per_trun: 3\n",
            "line 2: defaults.max_calls_per_trun: unknown key (did you mean max_calls_per_turn?).",
        ),
        ("agent:\n  demo: {}\n", "line 1: agent: unknown key (did you mean agents?)."),
        (
            "agents:\n  demo:\n    gateway: {compres: false}\n",
            "line 3: agents.demo.gateway.compres: unknown key (did you mean compress?).",
        ),
        # A required key misspelt: the misspelling, not "input: Field required".
        (
            "pricing:\n  m: {inptu: 1, output: 2}\n",
            "line 2: pricing.m.inptu: unknown key (did you mean input?).",
        ),
        (
            "agents:\n  demo:\n    zzzz: 1\n",
            "line 3: agents.demo.zzzz: unknown key (the keys here are limitUsd, model, provider, "
            "role, tools, mcp, workspace, ambient, gateway, guard, fallback).",
        ),
    ],
)
def test_a_misspelt_key_is_named_with_the_key_it_is_close_to(text, expected):
    """The file mixes limitUsd with max_calls_per_turn: a newcomer's first edit
    is often a key in the wrong case, and "unknown key" alone leaves them to
    find which spelling the block wants."""
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    assert str(caught.value) == f"agents.yaml {expected}"


def test_an_unreadable_file_is_one_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="Cannot read"):
        load_config(tmp_path / "missing.yaml")


# ── the bounds refuse attacks, not configs people write ───────────────────


def test_aliases_and_merges_within_the_bound_still_work():
    config = parse_config(
        "pricing:\n"
        "  a: &price {input: 1, output: 2}\n"
        "  b: *price\n"
        "agents:\n"
        "  base: &agent {limitUsd: 1, role: be brief}\n"
        "  other: {<<: *agent, role: be thorough}\n"
    )
    assert config.pricing["b"] == config.pricing["a"]
    assert config.agents["other"].limit_usd == Decimal(1)
    assert config.agents["other"].role == "be thorough"


def test_a_fleet_of_300_agents_with_long_roles_loads_quickly(tmp_path):
    role = "You review pull requests and say what is wrong, briefly. " * 40
    agents = "".join(
        f"  agent-{i}:\n    limitUsd: 0.5\n    role: {role}\n    tools: [read_file, grep]\n"
        for i in range(300)
    )
    path = tmp_path / "agents.yaml"
    path.write_text(f"defaults:\n  limitUsd: 1\nagents:\n{agents}")
    started = time.process_time()
    config = load_config(path)
    assert time.process_time() - started < 2
    assert len(config.agents) == 300


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:11434/v1",
        "https://api.openai.com/v1",
        "http://[::1]:8080/v1",
        "https://openrouter.ai/api/v1",
        "http://localhost:1234/v1/",
    ],
)
def test_real_base_urls_are_accepted(url):
    config = parse_config(f"providers:\n  x: {{kind: openai-compatible, base_url: '{url}'}}\n")
    assert config.providers["x"].base_url == url


def test_every_tool_in_the_registry_is_a_valid_tool_name():
    names = ", ".join(TOOLS)
    config = parse_config(f"agents:\n  a:\n    tools: [{names}]\n")
    assert config.agents["a"].tools == list(TOOLS)


def test_a_utf8_bom_and_windows_line_endings_are_fine(tmp_path):
    path = tmp_path / "agents.yaml"
    path.write_bytes(b"\xef\xbb\xbfdefaults:\r\n  limitUsd: 3\r\n")
    assert load_config(path).defaults.limit_usd == Decimal(3)


def test_an_explicitly_empty_mapping_is_a_deliberate_choice_of_the_defaults(tmp_path):
    path = tmp_path / "agents.yaml"
    path.write_text("{}  # every default, on purpose\n")
    assert load_config(path).defaults.limit_usd is None


def test_an_agent_naming_no_provider_runs_where_its_model_is_listed():
    config = parse_config(
        "providers:\n"
        "  anthropic: {kind: anthropic, models: [claude-haiku-4-5]}\n"
        "  local: {kind: openai-compatible, base_url: 'http://127.0.0.1:8080/v1', models: [q]}\n"
        "agents:\n"
        "  poet: {model: claude-haiku-4-5}\n"
        "  demo: {}\n"
        "  mine: {model: q, provider: local}\n"
    )
    assert [config.provider_of(a) for a in config.agents.values()] == [
        "anthropic",
        EMBEDDED,
        "local",
    ]


MCP = "agents:\n  demo:\n    mcp:\n      servers:\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "agents:\n  demo:\n    tools: [read_file, time.*]\n",
            "agents.yaml line 3: agents.demo.tools.1: 'time.*' names the MCP server 'time'; "
            "it has no MCP servers.",
        ),
        (MCP + "        Bad: {command: x}\n", "line 5: agents.demo.mcp.servers.Bad: not a valid"),
        (MCP + "        a__b: {command: x}\n", "line 5: agents.demo.mcp.servers.a__b: not a valid"),
        (MCP + "        a: {args: [x]}\n", "line 5: agents.demo.mcp.servers.a.command: missing"),
        (MCP + "        a: {command: x, bogus: 1}\n", "mcp.servers.a.bogus: unknown key"),
        (MCP + "        a: {command: x, env: {1x: y}}\n", "'1x' is not the name of an environment"),
        (MCP + "        a: {command: x, read: [rel]}\n", "'rel' is not an absolute directory"),
        (
            MCP + "        a: {command: x, timeout_s: 0}\n",
            "servers.a.timeout_s: a number above 0; got 0.",
        ),
        (
            "agents:\n  g:\n    gateway: {}\n    mcp: {servers: {a: {command: x}}}\n",
            "line 4: agents.g.mcp: a gateway agent's client brings its own tools",
        ),
        (
            "defaults:\n  mcp: {servers: {Time: {command: x}}}\n",
            "line 2: defaults.mcp.servers.Time: not a valid server name",
        ),
    ],
)
def test_a_bad_mcp_block_is_one_clear_error_with_its_line(text, expected):
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_agents_mcp_servers_add_to_the_defaults_and_replace_one_of_the_same_name():
    config = parse_config(
        "defaults:\n"
        "  mcp: {servers: {time: {command: mcp-server-time}, git: {command: mcp-server-git}}}\n"
        "agents:\n"
        "  demo:\n"
        "    tools: [read_file, time.get_current_time, notes.*]\n"
        "    mcp: {servers: {time: {command: /opt/time, args: [-v]}, notes: {command: notes}}}\n"
        "  other: {}\n"
    )
    demo = config.mcp_servers_of("demo")
    assert {name: s.command for name, s in demo.items()} == {
        "time": "/opt/time",
        "git": "mcp-server-git",
        "notes": "notes",
    }
    assert list(config.mcp_servers_of("other")) == ["time", "git"]
    assert list(config.mcp_servers_of("made-later")) == ["time", "git"]


def test_ten_thousand_agents_are_read(tmp_path):
    """A fleet's file is read whole: its bounds grow with its size (the bombs
    they stop are in tests/attack/test_config_table.py)."""
    listed = "".join(f"  agent-{n:05d}: {{}}\n" for n in range(10_000))
    path = tmp_path / "agents.yaml"
    path.write_text(f"defaults:\n  limitUsd: 5\nagents:\n{listed}")
    config = load_config(path)
    assert len(config.agents) == 10_000
    assert config.ceiling_of(config.agents["agent-09999"]) == Decimal(5)


def test_ten_thousand_agents_sharing_one_block_through_an_alias_are_read():
    """An anchor used as a template expands to more values than the file
    spells out, as honestly as a bomb does not."""
    block = "{limitUsd: 2, tools: [read_file, grep, list_files], role: Be brief.}"
    listed = "".join(f"  agent-{n:05d}: *base\n" for n in range(1, 10_000))
    config = parse_config(
        f"defaults:\n  limitUsd: 5\nagents:\n  agent-00000: &base {block}\n{listed}"
    )
    assert len(config.agents) == 10_000
    assert config.agents["agent-09999"].tools == ["read_file", "grep", "list_files"]
