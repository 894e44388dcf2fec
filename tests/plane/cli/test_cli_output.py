"""What the `plane` command prints, checked on its own functions: a
conversation shown in a terminal shows control characters, it does not obey
them."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from plane.cli.clients import send_line
from plane.cli.failing import say
from plane.cli.manage import agent_settings, log_line
from plane.wire.protocol import AgentState, ConversationMessage, MessageKind
from plane.wire.words import tokens

ESCAPES = "ok\x1b]0;owned\x07\x1b[2J\rhidden\x9b31m\x00"


def message(text: str, kind: MessageKind = "agent") -> ConversationMessage:
    return ConversationMessage(
        id=1, agent="demo", at=datetime(2026, 12, 4, tzinfo=UTC), kind=kind, text=text
    )


def test_log_and_send_show_control_characters_instead_of_sending_them_to_the_terminal():
    for printed in (log_line(message(ESCAPES)), send_line(message(ESCAPES))):
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in printed), printed
        assert printed.endswith(r"ok\x1b]0;owned\x07\x1b[2J\rhidden\x9b31m\x00")


def test_line_breaks_and_tabs_are_kept():
    assert log_line(message("one\n\ttwo")).endswith("one\n" + " " * 17 + "\ttwo")
    assert send_line(message("one\n\ttwo", kind="tool")) == "· one\n\ttwo"


def test_show_prints_a_role_s_control_characters_shown():
    agent = AgentState(name="demo", model="m", provider="p", role="be \x1b[8mquiet")
    assert r"  role       be \x1b[8mquiet" in agent_settings(agent).splitlines()


def test_token_counts_round_into_the_next_unit_not_past_it():
    counts = (999, 1000, 999_949, 999_950, 999_999, 1_000_000, 1_049_999)
    shown = ["999", "1k", "999.9k", "1M", "1M", "1M", "1M"]
    assert [tokens(n) for n in counts] == shown


def test_show_keeps_a_role_of_several_lines_in_its_column():
    agent = AgentState(name="demo", model="m", provider="p", role="one\ntwo\n  three")
    lines = agent_settings(agent).splitlines()
    at = lines.index("  role       one")
    assert lines[at + 1 : at + 4] == [
        " " * 13 + "two",
        " " * 13 + "  three",
        "  tools      every tool",
    ]


def test_a_refusal_quoting_what_was_typed_shows_its_control_characters(capsys):
    say("a\x1b]0;owned\x07b is not an amount.\r")
    assert capsys.readouterr().err == "plane: a\\x1b]0;owned\\x07b is not an amount.\n"


STATUS = {
    "day": "2026-12-04",
    "now": "2026-12-04T10:00:00+00:00",
    "resets_at": "2026-12-05T00:00:00+00:00",
    "default_model": "m",
    "default_limit_usd": "5",
    "fleet_spend_today_usd": "1.5",
    "fleet_limit_usd": None,
    "agents": [
        {"name": "demo", "model": "m", "spend_today_usd": "1.5", "limit_usd": "2"},
        {"name": 'odd "agents": [] name', "model": "},{", "status": "held"},
    ],
    "groups": [
        {"name": "empty", "agents": []},
        {"name": "team", "spend_today_usd": "1.5", "limit_usd": "9", "agents": ["demo"]},
    ],
}


def test_status_json_writes_an_agent_a_line_and_says_what_it_said():
    """Every agent on one line (a fleet of 100,000 is 100,000 lines, each
    encoded by json's C encoder); the whole is the same JSON, groups with no
    agents and names that look like its keys included."""
    from plane.cli.status import status_json

    text = status_json(STATUS)
    lines = text.splitlines()
    assert lines.count('  "agents": [') == 1
    rows = [line for line in lines if line.startswith('    {"name": ')]
    assert [json.loads(line.rstrip(","))["name"] for line in rows] == [
        "demo",
        'odd "agents": [] name',
    ]
    read = json.loads(text)
    assert [a["state"] for a in read["agents"]] == ["idle", "held"]
    assert read["agents"][0]["spend_today_usd"] == "1.5"
    assert read["agents"][1]["model"] == "},{"
    assert read["fleet_spend_today_usd"] == "1.5"
    assert read["groups"] == [
        {"name": "empty", "spend_today_usd": "0", "limit_usd": None, "agents": []}
        | {"in_flight_usd": "0"},
        {"name": "team", "spend_today_usd": "1.5", "limit_usd": "9", "agents": ["demo"]}
        | {"in_flight_usd": "0"},
    ]
    assert json.loads(status_json({**STATUS, "agents": []}))["agents"] == []
