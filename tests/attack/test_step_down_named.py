"""Step down attacked from the client's side: a gateway client that names
its agent's fallback model itself, past the ratio, is answered by the model
it named, and nothing says it stepped down from it."""

from __future__ import annotations

from decimal import Decimal

import pytest

from plane.wire.protocol import Usage
from tests.plane.gateway.test_gateway_loop import AIDER_STEPS_DOWN, HELLO_CHAT, openai_client
from tests.support.fixtures_gateway import StartGateway
from tests.support.scripted_llm import Reply
from tests.support.sdks import ON_ONE_WORKER

pytestmark = [pytest.mark.timeout(60), ON_ONE_WORKER]


async def test_a_client_that_names_the_fallback_itself_did_not_step_down(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway(AIDER_STEPS_DOWN)
    await gw.services.gate.ceilings.set("aider", Decimal(1))
    gw.llm.default_reply = Reply("ok", Usage(input_tokens=600))
    async with openai_client(gw) as client:
        await client.chat.completions.create(
            model="scripted-model", max_tokens=10, messages=HELLO_CHAT
        )
        row = await gw.rows.state("aider")
        assert (row.model, row.stepped_down_from) == ("other-model", "scripted-model")
        await client.chat.completions.create(
            model="other-model", max_tokens=10, messages=HELLO_CHAT
        )
    row = await gw.rows.state("aider")
    assert (row.model, row.stepped_down_from) == ("other-model", None)
