"""`/metrics` by group, tag and tool, scraped from the real listener and
read with prometheus_client's own parser; labels bounded whatever the
clients send."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from plane.wire.protocol import Usage
from tests.plane.daemon.test_metrics import samples
from tests.support.fixtures_gateway import CONFIG, GatewayPlane, StartGateway
from tests.support.scripted_llm import Reply
from tests.support.sdks import ON_ONE_WORKER, openai_sdk

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

pytestmark = [pytest.mark.timeout(60), ON_ONE_WORKER]

PURPOSED = CONFIG + (
    "groups:\n  team: {limitUsd: 50, agents: [aider, claude]}\n"
    "tags:\n  ticket-123: {limitUsd: 3}\n  ticket-9: {limitUsd: 2}\n"
)
HELLO_CHAT: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hello"}]


async def scrape(gw: GatewayPlane) -> dict:
    return samples(await gw.scrape())


async def test_groups_tags_and_tools_with_bounded_labels(start_gateway: StartGateway) -> None:
    gw = await start_gateway(PURPOSED)
    gw.llm.default_reply = Reply("ok", Usage(input_tokens=10, output_tokens=1))

    def chat(n: int) -> list[ChatCompletionMessageParam]:
        """A call whose tool result is new each time (the same one thirty times is a loop)."""
        return [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "run"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}},
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": f"done {n:02d}"},
        ]  # fmt: skip

    async with openai_sdk(
        base_url=f"{gw.url}/v1", api_key=gw.keys["aider"], max_retries=0
    ) as client:
        for n in range(30):  # thirty free-form tags, each its own call
            await client.chat.completions.create(
                model="scripted-model", messages=chat(n), max_tokens=5,
                extra_headers={"x-plane-tag": f"free-{n:02d}"},
            )  # fmt: skip
        await client.chat.completions.create(
            model="scripted-model", messages=HELLO_CHAT, max_tokens=5,
            extra_headers={"x-plane-tag": "ticket-123"},
        )  # fmt: skip
    got = await scrape(gw)
    tags = {dict(labels)["tag"] for (name, labels) in got if name == "plane_tag_spend_today_usd"}
    assert {"ticket-123", "ticket-9", "(other)"} <= tags
    assert len(tags) == 2 + 20 + 1, "the configured tags, the top 20, and the rest as one"
    assert got["plane_tag_spend_today_usd", (("tag", "ticket-123"),)] == pytest.approx(0.012)
    assert got["plane_tag_spend_today_usd", (("tag", "ticket-9"),)] == 0
    assert got["plane_tag_ceiling_usd", (("tag", "ticket-123"),)] == 3
    assert got["plane_group_spend_today_usd", (("group", "team"),)] == pytest.approx(31 * 0.012)
    assert got["plane_group_ceiling_usd", (("group", "team"),)] == 50
    assert got["plane_group_cost_usd_total", (("group", "team"),)] == pytest.approx(31 * 0.012)
    tools = {
        dict(labels)["tool"]: value
        for (name, labels), value in got.items()
        if name == "plane_tool_cost_usd_total"
    }
    assert set(tools) == {"shell", "(prompt)", "(messages)", "(answers)"}
    assert sum(tools.values()) == pytest.approx(31 * 0.012), "every settled call, split"
