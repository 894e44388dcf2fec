"""Attack: a Chat Completions request that says `max_completion_tokens: null`
beside `max_tokens: 50`. A null field is an absent one, so the answer is
bounded by the other: read as a call with no output limit, it waited
behind every other such call (a call nothing bounds never flies beside
another), though each fits the day many times over.

A real plane with its HTTP listener and the scripted upstream.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from plane.wire.protocol import Usage
from tests.support.fixtures_gateway import StartGateway
from tests.support.local_http import local_client
from tests.support.scripted_llm import Reply

pytestmark = [pytest.mark.timeout(60)]

HELLO = [{"role": "user", "content": "hello"}]
MET_WITHIN_S = 10
"""How long the first call's answer waits for the second call to reach the
provider too: they meet there only if both were let go together."""


async def test_a_null_max_completion_tokens_leaves_max_tokens_bounding_the_answer(
    start_gateway: StartGateway,
) -> None:
    """Two such calls at once, $0.10 at most each under a $10 day: both go
    together, each bounded by its `max_tokens`."""
    gw = await start_gateway()
    arrived, lock, met = threading.Event(), threading.Lock(), []
    count = 0

    def answered(body: dict[str, Any], serial: int) -> Reply:
        nonlocal count
        with lock:
            count += 1
            if count == 2:
                arrived.set()
        met.append(arrived.wait(MET_WITHIN_S))
        return Reply("ok", Usage(input_tokens=2, output_tokens=5))

    gw.llm.responder = answered
    body = {
        "model": "scripted-model",
        "messages": HELLO,
        "max_completion_tokens": None,
        "max_tokens": 50,
    }
    path, heads = gw.calls_as("aider")
    async with local_client(base_url=gw.url, timeout=60) as http:
        answers = await asyncio.gather(*(http.post(path, json=body, headers=heads) for _ in "ab"))
    assert [a.status_code for a in answers] == [200, 200]
    assert met == [True, True], "a call bounded by max_tokens waited as one with no limit"
