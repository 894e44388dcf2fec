"""Both providers against the scripted server: replies, tool calls, and every
fault the plane must survive. `provider` runs each test once per protocol."""

from __future__ import annotations

from functools import partial

import pytest

from plane.errors import ProviderError
from plane.providers.base import BrokenReply, Provider, ToolSpec
from plane.providers.http import RetryPolicy
from plane.providers.openai import OpenAIProvider
from plane.wire.protocol import Usage
from tests.plane.providers.conftest import scripted_provider
from tests.plane.providers.support import SECRET, Collected, Sleeps, ask
from tests.support.scripted_llm import ScriptedLLM

USAGE = Usage(input_tokens=1200, cache_read_tokens=1000, cache_write_tokens=0, output_tokens=9)
READ = ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {}})


def assert_secret_kept(error: BaseException) -> None:
    assert SECRET not in str(error)
    assert SECRET[:12] not in str(error)


@pytest.mark.parametrize("stream", [True, False])
async def test_text_and_exact_usage(provider: Provider, scripted_llm: ScriptedLLM, stream: bool):
    scripted_llm.reply("The linker could not find libfoo.", usage=USAGE)
    seen = Collected()
    completion = await provider.complete(ask(stream=stream), seen)
    assert completion.text == "The linker could not find libfoo."
    assert completion.usage == USAGE and not completion.usage_estimated
    assert completion.model == "test-model"
    if stream:
        assert len(seen.pieces) > 1 and "".join(seen.pieces) == completion.text


@pytest.mark.parametrize("stream", [True, False])
async def test_tool_calls(provider: Provider, scripted_llm: ScriptedLLM, stream: bool):
    scripted_llm.reply("", tool_calls=[("read_file", {"path": "src/main.py", "lines": [1, 40]})])
    completion = await provider.complete(ask(stream=stream, tools=(READ,)))
    [call] = completion.tool_calls
    assert call.name == "read_file" and call.id
    assert call.arguments.replace(" ", "") == '{"path":"src/main.py","lines":[1,40]}'
    assert completion.stop_reason in ("tool_calls", "tool_use")


async def test_429_waits_as_long_as_retry_after_says(
    provider: Provider, scripted_llm: ScriptedLLM, sleeps: Sleeps
):
    scripted_llm.fault(429, retry_after=7).reply("done", usage=USAGE)
    completion = await provider.complete(ask())
    assert completion.text == "done" and completion.usage == USAGE
    assert sleeps.waits == [7.0]
    assert len(scripted_llm.requests) == 2


async def test_5xx_backs_off_exponentially(
    provider: Provider, scripted_llm: ScriptedLLM, sleeps: Sleeps
):
    scripted_llm.fault(500).fault(503).fault(529).reply("done")
    assert (await provider.complete(ask(stream=False))).text == "done"
    assert sleeps.waits == [0.5, 1.0, 2.0]


async def test_backoff_has_jitter():
    waits = [RetryPolicy(jitter=partial(float, j)).backoff(2) for j in (0.0, 0.5, 0.999)]
    assert waits[0] == 2.0 and waits[0] > waits[1] > waits[2] > 1.5


async def test_retries_are_bounded(provider: Provider, scripted_llm: ScriptedLLM, sleeps: Sleeps):
    for _ in range(6):
        scripted_llm.fault(502)
    with pytest.raises(ProviderError, match=r"^scripted: .*HTTP 502.*\(4 attempts\)\.$") as caught:
        await provider.complete(ask())
    assert len(scripted_llm.requests) == 4 and len(sleeps.waits) == 3
    assert_secret_kept(caught.value)


async def test_a_retry_after_beyond_the_budget_is_not_waited_for(
    provider: Provider, scripted_llm: ScriptedLLM, sleeps: Sleeps
):
    scripted_llm.fault(429, retry_after=3600).reply("too late")
    with pytest.raises(ProviderError, match="rate limited"):
        await provider.complete(ask())
    assert sleeps.waits == [] and len(scripted_llm.requests) == 1


async def test_a_refused_key_is_not_retried_and_never_repeated(
    provider: Provider, scripted_llm: ScriptedLLM, sleeps: Sleeps
):
    echoed = f"Incorrect API key provided: {SECRET[:14]}*****{SECRET[-6:]}"
    scripted_llm.fault(401, message=echoed)
    with pytest.raises(ProviderError, match="TEST_KEY") as caught:
        await provider.complete(ask())
    assert len(scripted_llm.requests) == 1 and sleeps.waits == []
    assert_secret_kept(caught.value)
    assert SECRET[-6:] not in str(caught.value)


async def test_a_bad_request_is_not_retried(provider: Provider, scripted_llm: ScriptedLLM):
    scripted_llm.fault(400)
    with pytest.raises(ProviderError, match=r"refused \(HTTP 400"):
        await provider.complete(ask())
    assert len(scripted_llm.requests) == 1


@pytest.mark.parametrize("stream", [True, False])
async def test_malformed_json_is_a_broken_reply_charged_from_an_estimate(
    provider: Provider, scripted_llm: ScriptedLLM, stream: bool
):
    scripted_llm.malformed()
    with pytest.raises(BrokenReply) as caught:
        await provider.complete(ask(stream=stream))
    # ceil(("You are terse." + "hello there") = 25 chars / 3.5) = 8 tokens in.
    assert caught.value.usage.input_tokens == 8
    assert len(scripted_llm.requests) == 1  # it may be billed: never sent twice


async def test_a_stream_without_usage_is_estimated_never_free(
    provider: Provider, scripted_llm: ScriptedLLM
):
    scripted_llm.cut_stream(after_text="partial answer")
    seen = Collected()
    completion = await provider.complete(ask(), seen)
    assert completion.text == "partial answer" == "".join(seen.pieces)
    assert completion.usage_estimated
    assert completion.usage.output_tokens == 4  # ceil(14 / 3.5)
    assert completion.usage.input_tokens > 0


async def test_anthropic_cut_stream_keeps_the_input_usage_it_reported(
    anthropic: Provider, scripted_llm: ScriptedLLM
):
    """message_start states the input tokens; only the output is estimated."""
    scripted_llm.cut_stream(after_text="partial answer")
    completion = await anthropic.complete(ask())
    # the scripted server's input: ceil(25 chars / 4) = 7
    assert completion.usage == Usage(input_tokens=7, output_tokens=4)
    assert completion.usage_estimated


async def test_a_stream_broken_mid_answer_keeps_its_text(
    provider: Provider, scripted_llm: ScriptedLLM
):
    scripted_llm.cut_stream(after_text="half of an", reset=True)
    completion = await provider.complete(ask())
    assert completion.text == "half of an"
    assert completion.stop_reason == "interrupted" and completion.usage_estimated
    assert len(scripted_llm.requests) == 1


async def test_a_body_cut_short_is_not_retried(provider: Provider, scripted_llm: ScriptedLLM):
    scripted_llm.cut_stream()
    with pytest.raises(BrokenReply, match="broke mid-reply"):
        await provider.complete(ask(stream=False))
    assert len(scripted_llm.requests) == 1


async def test_a_reset_before_the_answer_is_retried(provider: Provider, scripted_llm: ScriptedLLM):
    scripted_llm.reset_connection().reset_connection().reply("after the resets")
    completion = await provider.complete(ask())
    assert completion.text == "after the resets"
    assert len(scripted_llm.requests) == 3


async def test_resets_until_the_budget_runs_out(provider: Provider, scripted_llm: ScriptedLLM):
    for _ in range(8):
        scripted_llm.reset_connection()
    with pytest.raises(ProviderError, match=r"connection to 127\.0\.0\.1 broke") as caught:
        await provider.complete(ask())
    assert_secret_kept(caught.value)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_server_that_never_answers_times_out(scripted_llm: ScriptedLLM, kind: str):
    sleeps = Sleeps()
    retry = RetryPolicy(max_retries=1, sleep=sleeps)
    provider = scripted_provider(kind, scripted_llm, retry, timeout_s=0.2)
    scripted_llm.hang(10).hang(10)
    try:
        with pytest.raises(ProviderError, match=r"timed out waiting .*\(2 attempts\)"):
            await provider.complete(ask())
    finally:
        await provider.aclose()
    assert len(sleeps.waits) == 1


async def test_nobody_listening(sleeps: Sleeps):
    with ScriptedLLM() as gone:
        url = gone.base_url
    provider = OpenAIProvider(
        "scripted", base_url=url, retry=RetryPolicy(max_retries=2, sleep=sleeps)
    )
    try:
        with pytest.raises(ProviderError, match=r"could not connect .*\(3 attempts\)"):
            await provider.complete(ask())
    finally:
        await provider.aclose()


async def test_a_dropped_keep_alive_connection_is_retried_at_once(
    provider: Provider, scripted_llm: ScriptedLLM, sleeps: Sleeps
):
    """Servers (llama.cpp among them) close idle pooled connections; the one
    request that meets such a close is sent again without a wait or a retry."""
    scripted_llm.hang(0).reply("fine")
    assert (await provider.complete(ask())).text == "fine"
    assert len(scripted_llm.requests) == 2 and sleeps.waits == []


async def test_a_server_quoting_the_key_back_does_not_leak_it(
    provider: Provider, scripted_llm: ScriptedLLM
):
    for _ in range(4):
        scripted_llm.fault(500, message=f"upstream rejected token {SECRET} for org-1")
    with pytest.raises(ProviderError, match=r"HTTP 500: upstream rejected token \[redacted\]") as e:
        await provider.complete(ask())
    assert_secret_kept(e.value)
