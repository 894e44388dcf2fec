"""Streamed calls reuse their connection: the reader takes the body to its
end after the last event, so the connection goes back to the pool (against a
real provider, a connection left unread costs a TLS handshake per call)."""

from __future__ import annotations

from plane.providers.base import Provider
from plane.wire.protocol import Usage
from tests.plane.providers.support import ask
from tests.support.scripted_llm import ScriptedLLM

CALLS = 20


async def test_streamed_calls_share_one_connection(provider: Provider, scripted_llm: ScriptedLLM):
    for n in range(CALLS):
        scripted_llm.reply(f"answer {n}", usage=Usage(input_tokens=10, output_tokens=2))
    for n in range(CALLS):
        completion = await provider.complete(ask(stream=True))
        assert completion.text == f"answer {n}"
    assert scripted_llm.connections_accepted / CALLS <= 0.05
