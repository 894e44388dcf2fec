"""A tag's ceiling reached (`tags:` in agents.yaml) refused the gateway's
calls and alerted no one: the operator learned of it from a client's
errors. Now it is one `tag` alert a tag a day, however many calls and
planes refuse: two real planes on a real PostgreSQL, each with its gateway
on a real port, alerting one real receiver."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from plane.config import parse_config
from plane.wire.protocol import Usage
from tests.support.fixtures_alerts import Receiver
from tests.support.fixtures_gateway import CONFIG as GATEWAY
from tests.support.fixtures_plane import RunningPlane
from tests.support.fleet_alerts import settled
from tests.support.gateway_planes import ASKED, at_noon, call
from tests.support.scripted_llm import Reply, ScriptedLLM

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

LEASE_S = 3.0
WITHIN_S = 6 * LEASE_S
TAG = {"x-plane-tag": "ticket-7"}
TOLD = (
    "the tag ticket-7 has spent $0.20 today, of its $0.10 ceiling: its calls are refused until"
    " 00:00 UTC, in 12h 00m, or until the ceiling is raised in agents.yaml."
)


def config(receiver: Receiver) -> str:
    """The gateway agents, the tag ticket-7 of $0.10 a day, alerting `receiver`."""
    return (
        GATEWAY
        + "tags:\n  ticket-7: {limitUsd: 0.1}\n"
        + f"notify:\n  webhook: {receiver.url}/hook\n  ntfy: {receiver.url}/topic\n  retries: 0\n"
    )


@pytest.fixture
async def planes(
    tmp_path: Path, scripted_llm: ScriptedLLM, monkeypatch, postgres_url, receiver
) -> AsyncIterator[tuple[RunningPlane, RunningPlane, str]]:
    """Planes A and B on one clock, each with its gateway listening, and aider's key."""
    async with at_noon(
        tmp_path, scripted_llm, postgres_url, monkeypatch, LEASE_S, config(receiver)
    ) as planes:
        yield planes


async def test_a_tags_ceiling_reached_is_one_alert_however_many_planes_refuse_its_calls(
    planes: tuple[RunningPlane, RunningPlane, str], receiver: Receiver
):
    a, b, key = planes
    a.llm.default_reply = Reply("ok", Usage(input_tokens=200))  # $0.20
    assert (await call(a, key, ASKED, TAG)).status_code == 200
    refused = [await call(plane, key, ASKED, TAG) for plane in (a, b, a, b)]
    assert [answer.status_code for answer in refused] == [400] * 4
    assert (await call(b, key, ASKED)).status_code == 200, "its calls without the tag go on"
    await settled((a, b), receiver, "tag", WITHIN_S)
    [told] = [h for h in receiver.hooks() if h["event"] == "tag"]
    assert told["text"] == TOLD
    assert (told["cause"], told["tag"], told["agent"], told["count"]) == (
        "tag",
        "ticket-7",
        "aider",
        1,
    )
    assert (told["spend_today_usd"], told["limit_usd"]) == ("0.2", "0.1")
    assert told["resumes_at"] == "2026-11-30T00:00:00+00:00"
    assert ("plane: the tag ticket-7 reached its ceiling", TOLD) in receiver.topics()


def test_notify_takes_the_tag_alert_among_its_kinds_and_sends_it_by_default():
    local = "http://127.0.0.1:9"
    agents = GATEWAY.replace("{base_url}", local).replace("{anthropic_url}", local)
    listed = parse_config(agents + f"notify:\n  webhook: {local}/hook\n  on: [held, tag]\n")
    default = parse_config(agents + f"notify:\n  webhook: {local}/hook\n")
    assert listed.notify is not None and listed.notify.on == ["held", "tag"]
    assert default.notify is not None and "tag" in default.notify.on
