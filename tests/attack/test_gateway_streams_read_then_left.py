"""Attack: a client reads a long answer to its last word, then leaves before
the event that carries its usage (a user who presses Esc as it ends; a
client that does so on purpose, every call). The provider wrote every
token the plane passed on, and bills them: the call is charged at least
those, never only the estimate of an answer far shorter than the one its
client was shown.

A real plane with its HTTP listener, a real TCP connection that closes, and
the scripted upstream, which sends the answer, then the rest only once the
plane has seen its client go.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import pytest

from plane.gateway.apis import Wire
from plane.gateway.forward import Responder
from plane.wire.protocol import Usage
from tests.support.fixtures_gateway import GatewayPlane, StartGateway
from tests.support.local_http import local_client
from tests.support.stream_events import sse

pytestmark = [pytest.mark.timeout(60)]

HELLO = [{"role": "user", "content": "hello"}]
WORDS = 2000
"""The answer's tokens, a word each, each its own event."""


def anthropic_answer() -> tuple[list[bytes], int]:
    """The events of a 2,000-token answer, and where its rest begins (a ping;
    then, a moment later, its end and usage)."""
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "scripted-model",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    block = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    word = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "word "},
    }
    events = [
        sse({"type": "message_start", "message": message}, "message_start"),
        sse(block, "content_block_start"),
    ]
    events += [sse(word, "content_block_delta")] * WORDS
    rest = len(events)
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": WORDS},
    }
    events += [
        sse({"type": "ping"}, "ping"),
        sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        sse(end, "message_delta"),
        sse({"type": "message_stop"}, "message_stop"),
    ]
    return events, rest


def chat_answer() -> tuple[list[bytes], int]:
    """The chunks of a 2,000-token answer, and where its rest begins (its
    last word; then, a moment later, its end and usage)."""
    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "scripted-model"}

    def said(delta: dict[str, str], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return sse({**chunk, "choices": [choice]})

    events = [said({"role": "assistant", "content": ""})] + [said({"content": "word "})] * WORDS
    rest = len(events)
    usage = {"prompt_tokens": 10, "completion_tokens": WORDS + 1, "total_tokens": WORDS + 11}
    events += [
        said({"content": "."}),
        said({}, "stop"),
        sse({**chunk, "choices": [], "usage": usage}),
        b"data: [DONE]\n\n",
    ]
    return events, rest


def responses_answer() -> tuple[list[bytes], int]:
    """The events of a 2,000-token response, and where its rest begins (its
    last word; then, a moment later, its end and usage)."""
    response = {"id": "resp_1", "object": "response", "model": "scripted-model"}
    created: dict[str, Any] = {
        "type": "response.created",
        "response": response | {"status": "in_progress"},
    }
    word: dict[str, Any] = {
        "type": "response.output_text.delta",
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "delta": "word ",
    }
    events = [sse(created, "response.created")] + [sse(word, "response.output_text.delta")] * WORDS
    rest = len(events)
    usage = {"input_tokens": 10, "output_tokens": WORDS + 1, "total_tokens": WORDS + 11}
    completed: dict[str, Any] = {
        "type": "response.completed",
        "response": response | {"status": "completed", "output": [], "usage": usage},
    }
    events += [
        sse(word | {"delta": "."}, "response.output_text.delta"),
        sse(completed, "response.completed"),
    ]
    return events, rest


ANSWERS = {
    "/v1/messages": anthropic_answer,
    "/v1/chat/completions": chat_answer,
    "/v1/responses": responses_answer,
}


class Watched:
    """How the plane answers its gateway's first call (which says when its client has gone)."""

    def __init__(self, gw: GatewayPlane) -> None:
        self.out: Responder | None = None
        handle = gw.gateway.handle

        async def handled(
            wire: Wire, headers: Mapping[str, str], raw: bytes, out: Responder
        ) -> None:
            self.out = out
            await handle(wire, headers, raw, out)

        gw.gateway.handle = handled

    async def gone(self) -> None:
        async with asyncio.timeout(10):
            while self.out is None or not self.out.gone():  # noqa: ASYNC110 - a transport's state
                await asyncio.sleep(0.01)


@pytest.mark.parametrize("path", list(ANSWERS))
async def test_a_client_that_reads_a_long_answer_and_leaves_before_its_usage_pays_for_it(
    start_gateway: StartGateway, path: str
) -> None:
    gw = await start_gateway()
    watched = Watched(gw)
    events, rest = ANSWERS[path]()
    more, end = threading.Event(), threading.Event()
    """The stream goes on once the plane has seen its client go; it ends
    only once the call is settled (the plane, writing to nobody, cuts it)."""
    billed = Usage(input_tokens=10, output_tokens=WORDS)
    gw.llm.verbatim(*events, usage=billed, held=((rest, more), (rest + 1, end)))
    if path == "/v1/messages":
        agent, heads = "claude", {"x-api-key": gw.keys["claude"], "anthropic-version": "1"}
    else:
        agent, heads = "aider", {"authorization": f"Bearer {gw.keys['aider']}"}
    await gw.services.gate.ceilings.set(agent, None)
    body = {"model": "scripted-model", "max_tokens": 4000, "stream": True, "messages": HELLO}
    watching = gw.watch()
    body = (
        body
        if path != "/v1/responses"
        else {
            "model": "scripted-model",
            "stream": True,
            "max_output_tokens": 4000,
            "input": "hello",
        }
    )
    shown = bytearray()
    async with local_client(base_url=gw.url, timeout=30) as http:
        async with http.stream("POST", path, json=body, headers=heads) as answer:
            async for chunk in answer.aiter_bytes():
                shown += chunk
                if shown.count(b'"word ') >= WORDS:
                    break  # every word shown: the client leaves before the usage
    await watched.gone()
    more.set()
    await gw.settled(watching, agent)
    end.set()
    [entry] = await gw.entries()
    # What the client was shown: 2,000 tokens at $2,000 per 1M.
    written = gw.services.pricer.price("scripted-model", Usage(output_tokens=WORDS)).cost_usd
    assert entry.status == "settled"
    assert entry.cost_usd >= written, (entry.cost_usd, written)
    assert entry.cost_usd <= written + Decimal("0.5"), entry.cost_usd
