"""A call's body written from each message's JSON, kept between calls, is
the body written whole, to the byte: over a real conversation with tools,
a compaction and a restart; over any history rewritten anywhere; and where
orjson cannot write a part (the standard library's way, as before)."""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from plane.providers.base import ChatMessage, CompletionRequest, ToolCall, ToolSpec
from plane.providers.connections import json_body
from plane.providers.encoded import EncodedHistories
from plane.providers.openai import OpenAIProvider, read_json, wire_message
from plane.wire.protocol import Usage
from tests.support.fixtures_examples import examples
from tests.support.fixtures_plane import CONFIG
from tests.support.history_edits import edited, edits

COMPACTING = CONFIG + (
    "session:\n  compact_enabled: true\n  compact_keep_last_n_turns: 1\n"
    "  compact_min_chars: 200\n  compact_trigger_chars: 1500\n"
)


def recording(provider: Any) -> list[tuple[CompletionRequest, bytes]]:
    """Each request the provider encodes, and the bytes it sends."""
    sent: list[tuple[CompletionRequest, bytes]] = []
    encode = provider.encode

    def kept(request: CompletionRequest) -> bytes:
        made = encode(request)
        sent.append((request, made))
        return made

    provider.encode = kept
    return sent


async def test_every_body_of_a_conversation_is_the_whole_bodys_to_the_byte(start_plane):
    plane = await start_plane(COMPACTING)
    sent = recording(plane.services.providers["scripted"])
    big = "head -c 9000 /dev/urandom | base64"  # nothing for tool-output compression to fold
    for n in range(6):
        command = big if n < 3 else "echo done é ✓ \U0001f600"
        plane.llm.reply("", tool_calls=[("run_command", {"command": command})], usage=Usage())
        plane.llm.reply(f"done {n} — «ok»", usage=Usage())
        await plane.turn("demo", f"task {n}")
    assert any("old tool result compacted" in str(r["messages"]) for r in plane.llm.requests)
    plane = await start_plane(restart=plane)
    after = recording(plane.services.providers["scripted"])
    for n in range(2):
        plane.llm.reply("", tool_calls=[("list_files", {"path": "."})], usage=Usage())
        plane.llm.reply(f"again {n}", usage=Usage())
        await plane.turn("demo", f"after the restart {n}")
    provider = plane.services.providers["scripted"]
    calls = sent + after
    assert len(calls) == len(plane.llm.requests) == 16
    for (request, made), received in zip(calls, plane.llm.requests, strict=True):
        assert made == json_body(provider.body(request))
        assert json.loads(made) == received
    # After the restart the history is read from the store, and sent whole.
    assert len(after[0][0].messages) > len(sent[-1][0].messages) - 2


TEXT = st.text(max_size=40)
MESSAGE = st.one_of(
    st.builds(ChatMessage, st.sampled_from(["user", "assistant"]), TEXT),
    st.builds(
        lambda text, args: ChatMessage("assistant", text, (ToolCall("c1", "grep", args),)),
        TEXT,
        TEXT,
    ),
    st.builds(lambda text: ChatMessage("tool", text, (), "c1", "grep"), TEXT),
)
EDIT = edits(MESSAGE)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(MESSAGE, max_size=20), st.lists(EDIT, max_size=12))
def test_a_history_grown_rewritten_or_read_again_encodes_as_a_whole(start, edits):
    """Each step: the history grows, is rewritten from a message on (a
    compaction), read again as new objects (a restart) or cut short; its
    joined JSON is always the whole list's."""
    histories = EncodedHistories(wire_message, kept_bytes=4096)
    other = [ChatMessage("user", "another agent's")]
    history = list(start)
    for kind, at, message in edits:
        history = edited(history, kind, at, message)
        whole = orjson.dumps([wire_message(m) for m in history])
        assert b"[" + histories.join(history) + b"]" == whole
        histories.join(other)  # another history between two calls of this one
    assert histories.kept_bytes <= 4096


def test_what_orjson_cannot_write_is_written_the_standard_librarys_way():
    huge = ToolSpec(name="count", description="Counts.", parameters={"maximum": 2**70})
    request = CompletionRequest(
        model="m", system="s", messages=(ChatMessage("user", "hi"),), tools=(huge,)
    )
    provider = OpenAIProvider("p", base_url="http://127.0.0.1:9/v1")
    assert provider.encode(request) == json_body(provider.body(request))
    assert b'"maximum":1180591620717411303424' in provider.encode(request)


def test_json_mode_and_no_system_prompt_are_the_whole_bodys():
    tool = ToolSpec(name="count", description="Counts.", parameters={"type": "object"})
    provider = OpenAIProvider("p", base_url="http://127.0.0.1:9/v1")
    history = (ChatMessage("user", "hi"), ChatMessage("assistant", "hello"))
    for request in (
        CompletionRequest(model="m", system="", messages=history),
        CompletionRequest(model="m", system="s", messages=(), tools=(tool,)),
        CompletionRequest(
            model="m", system="s", messages=history, tools=(tool,), tool_mode="json_schema"
        ),
        CompletionRequest(model="m", system="s", messages=history, stream=False, temperature=0.5),
    ):
        assert provider.encode(request) == json_body(provider.body(request))


def test_a_stream_event_reads_as_the_standard_library_reads_it():
    for data in (
        '{"choices": [{"delta": {"content": "hé ✓"}}], "usage": null}',
        '{"n": 18446744073709551616, "f": 1e400}',
        '{"x": NaN, "y": "\\ud800"}',
        '{"a": 1, "a": 2}',
        "[1.5, -0.0, 1e-7]",
    ):
        assert read_json(data) == json.loads(data) or str(read_json(data)) == str(json.loads(data))
    for broken in ("{", '{"a": }', ""):
        try:
            read_json(broken)
        except ValueError:
            continue
        raise AssertionError(f"read {broken!r}")
