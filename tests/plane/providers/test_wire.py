"""What the providers put on the wire: messages, tools, cache breakpoints,
the forced JSON schema, headers. Asserted on the scripted server's record."""

from __future__ import annotations

import json

from plane.providers import json_tools
from plane.providers.base import ChatMessage, CompletionRequest, Provider, ToolCall, ToolSpec
from tests.plane.providers.support import SECRET
from tests.support.scripted_llm import ScriptedLLM

READ = ToolSpec(
    "read_file",
    "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
CALL = ToolCall(id="call_1", name="read_file", arguments='{"path": "a.txt"}')
HISTORY = (
    ChatMessage("user", "what is in a.txt?"),
    ChatMessage("assistant", "", tool_calls=(CALL,)),
    ChatMessage("tool", "hello from a", tool_call_id="call_1"),
    ChatMessage("user", "and now?"),
)


def conversation(**kw) -> CompletionRequest:
    return CompletionRequest(model="m", system="Be exact.", messages=HISTORY, tools=(READ,), **kw)


async def test_openai_request_shape(openai: Provider, scripted_llm: ScriptedLLM):
    await openai.complete(conversation())
    [sent] = scripted_llm.requests
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["max_tokens"] == 1024
    assert sent["messages"] == [
        {"role": "system", "content": "Be exact."},
        {"role": "user", "content": "what is in a.txt?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "hello from a"},
        {"role": "user", "content": "and now?"},
    ]
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file.",
                "parameters": READ.parameters,
            },
        }
    ]
    assert scripted_llm.received[0].headers["Authorization"] == f"Bearer {SECRET}"


async def test_anthropic_request_shape_and_cache_breakpoints(
    anthropic: Provider, scripted_llm: ScriptedLLM
):
    await anthropic.complete(conversation(cache_breakpoints=(2,), stream=False))
    [sent] = scripted_llm.requests
    assert "stream" not in sent and sent["max_tokens"] == 1024
    assert sent["system"] == [
        {"type": "text", "text": "Be exact.", "cache_control": {"type": "ephemeral"}}
    ]
    assert sent["tools"] == [
        {"name": "read_file", "description": "Read a file.", "input_schema": READ.parameters}
    ]
    assert sent["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "what is in a.txt?"}]},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "read_file",
                    "input": {"path": "a.txt"},
                }
            ],
        },
        # the tool result and the next user text share one user turn; the
        # breakpoint after message 2 sits on the tool result
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_1",
                    "content": "hello from a",
                    "cache_control": {"type": "ephemeral"},
                },
                {"type": "text", "text": "and now?"},
            ],
        },
    ]
    headers = scripted_llm.received[0].headers
    assert headers["x-api-key"] == SECRET and headers["anthropic-version"] == "2023-06-01"
    assert scripted_llm.received[0].path == "/v1/messages"


async def test_anthropic_keeps_at_most_four_breakpoints(
    anthropic: Provider, scripted_llm: ScriptedLLM
):
    messages = tuple(
        ChatMessage("user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(9)
    )
    request = CompletionRequest(
        model="m", system="s", messages=messages, cache_breakpoints=(0, 2, 4, 6, 8)
    )
    await anthropic.complete(request)
    marked = [
        block["text"]
        for message in scripted_llm.requests[0]["messages"]
        for block in message["content"]
        if "cache_control" in block
    ]
    assert marked == ["turn 4", "turn 6", "turn 8"]  # + the system prompt: four


async def test_json_schema_mode_forces_the_schema_and_renders_history_as_json(
    openai: Provider, scripted_llm: ScriptedLLM
):
    scripted_llm.reply('{"tool": "read_file", "arguments": {"path": "b.txt"}}')
    completion = await openai.complete(conversation(tool_mode="json_schema", stream=False))
    [call] = completion.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("read_file", {"path": "b.txt"})
    assert completion.text == ""
    [sent] = scripted_llm.requests
    assert "tools" not in sent
    schema = sent["response_format"]["json_schema"]["schema"]
    assert [sorted(choice["properties"]) for choice in schema["anyOf"]] == [
        ["arguments", "tool"],
        ["answer"],
    ]
    assert schema["anyOf"][0]["properties"]["arguments"] == READ.parameters
    system, *rest = sent["messages"]
    assert system["content"].startswith("Be exact.\n\nYou can use these tools:")
    assert rest == [
        {"role": "user", "content": "what is in a.txt?"},
        {"role": "assistant", "content": '{"tool": "read_file", "arguments": {"path": "a.txt"}}'},
        {"role": "user", "content": "Result of read_file:\nhello from a"},
        {"role": "user", "content": "and now?"},
    ]


async def test_json_schema_mode_streams_only_the_answer(
    openai: Provider, scripted_llm: ScriptedLLM
):
    scripted_llm.reply('{"answer": "It says hello."}')
    seen: list[str] = []

    async def on_text(text: str) -> None:
        seen.append(text)

    completion = await openai.complete(conversation(tool_mode="json_schema"), on_text)
    assert completion.text == "It says hello." and seen == ["It says hello."]


def test_json_replies_parse_back():
    tools = (READ,)
    assert json_tools.parse('{"answer": "hi"}', tools) == ("hi", ())
    text, calls = json_tools.parse('{"tool": "read_file", "arguments": {"path": "x"}}', tools)
    assert text == "" and calls[0].name == "read_file"
    for odd in ['{"tool": "rm_rf", "arguments": {}}', '{"answer": "cut', "[1, 2]", "plain"]:
        assert json_tools.parse(odd, tools) == (odd, ())
