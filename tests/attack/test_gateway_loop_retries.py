"""The loop guard at the gateway attacked from the honest side: a client
retrying because the provider failed is not a client resending the same
request in a loop. DESIGN, "Guard rails beyond a ceiling": "An agent that
repeats itself — … a gateway client resending the same request — is held";
README: "a call the provider refused is not seen (the client's retry is the
same call)". A provider overloaded in the middle of a stream (Anthropic's
`overloaded_error` event after `message_start`) has refused the call as
surely as one that answered 529: the client got no answer and asks again."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from plane.wire.protocol import Usage
from tests.support.fixtures_gateway import StartGateway
from tests.support.sdk_replies import text_of
from tests.support.sdks import ON_ONE_WORKER, anthropic, anthropic_sdk
from tests.support.stream_events import messages_stream, sse

if TYPE_CHECKING:
    from anthropic.types import MessageParam

pytestmark = [pytest.mark.timeout(60), ON_ONE_WORKER]

CENT = Usage(input_tokens=10)
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
UNDER_WAY: list[MessageParam] = [
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": "Hello. What shall I look at?"},
    {"role": "user", "content": "the open issues"},
]


async def test_retries_after_the_provider_failed_mid_stream_are_not_a_loop(
    start_gateway: StartGateway,
) -> None:
    gw = await start_gateway()
    started = messages_stream({"input_tokens": 10, "output_tokens": 1}, {})[0]
    for _ in range(6):
        gw.llm.verbatim(started, sse(OVERLOADED, "error"))
    gw.llm.reply("at last", usage=CENT)
    client = anthropic_sdk(base_url=gw.url, api_key=gw.keys["claude"], max_retries=0)
    async with client:
        for _ in range(6):  # as a client retries an overloaded stream
            with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
                async with client.messages.stream(
                    model="scripted-model", max_tokens=10, messages=UNDER_WAY
                ) as stream:
                    await stream.get_final_message()
        answer = await client.messages.create(
            model="scripted-model", max_tokens=10, messages=UNDER_WAY
        )
    assert text_of(answer) == "at last"
    assert len(gw.llm.requests) == 7
    assert (await gw.rows.state("claude")).status != "held"
