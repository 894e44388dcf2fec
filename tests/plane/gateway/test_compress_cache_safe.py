"""Gateway compression keeps the client's prompt cache warm: a tool result
gives the same bytes in every request that carries it, marked for the cache
or not, so the prefix the provider cached from one request is the prefix of
the next; the call that produced a result is the compressor's hint."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from plane.config import parse_config
from plane.economy.compress import compress
from plane.gateway.apis import WIRES
from plane.gateway.compress import (
    Remembered,
    compress_chat,
    compress_messages,
    compress_responses,
    hint,
)

PYTEST_LOG = "\n".join(
    f"tests/test_area.py::test_case_{i:03} PASSED{' ' * (40 - len(str(i)))}[{i % 100:3}%]"
    for i in range(300)
)
LISTING = json.dumps(
    [{"id": i, "name": f"item {i}", "status": "ok", "tags": ["a", "b"]} for i in range(200)],
    indent=2,
)
DIFF = "\n".join(
    ["diff --git a/src/app.py b/src/app.py", "--- a/src/app.py", "+++ b/src/app.py"]
    + [f"@@ -{i * 10},3 +{i * 10},3 @@\n context {i}\n-old {i}\n+new {i}" for i in range(80)]
)
SYSTEM = [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}]
EPHEMERAL = {"type": "ephemeral"}


def _kept(_refs: dict[str, str]) -> None:
    pass


def _step(n: int, command: str, output: str) -> list[dict[str, Any]]:
    """One step of a Claude Code session: the model's Bash call, then its result."""
    call = {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": command}}
    result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": output}
    return [
        {"role": "assistant", "content": [{"type": "text", "text": f"Step {n}."}, call]},
        {"role": "user", "content": [result]},
    ]


def _marked_last(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claude Code's placement: a breakpoint on the last block of the last message."""
    out = copy.deepcopy(messages)
    out[-1]["content"][-1]["cache_control"] = EPHEMERAL
    return out


def _session(steps: int) -> dict[str, Any]:
    outputs = [("git diff", DIFF), ("cat items.json", LISTING), ("pytest -v", PYTEST_LOG)]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    for n in range(steps):
        messages += _step(n, *outputs[n % len(outputs)])
    return {"model": "claude-sonnet-4-5", "system": SYSTEM, "messages": _marked_last(messages)}


def _blocks(body: dict[str, Any]) -> list[str]:
    """The request as Anthropic's cache reads it: tools, system, then every message
    block in order, each without its breakpoint (a mark says where to cache, it is
    not part of what is cached)."""
    blocks = [json.dumps(body.get("tools"), sort_keys=True)]
    for block in [*body["system"], *(b for m in body["messages"] for b in _content(m))]:
        blocks.append(json.dumps({k: v for k, v in block.items() if k != "cache_control"}))
    return blocks


def _content(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def test_a_result_marked_for_the_cache_is_compressed_and_keeps_its_mark() -> None:
    body = _session(3)
    marked = body["messages"][-1]["content"][-1]
    assert marked["cache_control"] == EPHEMERAL
    sent, saved = compress_messages(body, _kept)
    block = sent["messages"][-1]["content"][-1]
    assert block["cache_control"] == EPHEMERAL, "the client's breakpoint moved or went"
    assert len(block["content"]) < len(marked["content"]) / 4 and saved > 0
    assert sent["system"] == SYSTEM, "the system prompt is never compressed"


def test_the_same_request_compressed_twice_gives_the_same_bytes() -> None:
    first, _ = compress_messages(_session(6), _kept)
    second, _ = compress_messages(_session(6), _kept)
    assert json.dumps(first) == json.dumps(second)


def test_a_request_one_turn_longer_keeps_the_cached_prefix_byte_for_byte() -> None:
    """Request n marked its last result; request n+1 marks a newer one. What
    request n sent, block for block, is how request n+1 begins."""
    for steps in range(1, 7):
        before, _ = compress_messages(_session(steps), _kept)
        after, _ = compress_messages(_session(steps + 1), _kept)
        cached, extended = _blocks(before), _blocks(after)
        assert extended[: len(cached)] == cached, f"step {steps}: the cached prefix changed"
        assert len(extended) > len(cached)


def test_a_fresh_process_compresses_to_the_same_bytes() -> None:
    """No state of one process (its remembered results) changes what is sent."""
    here, _ = compress_messages(_session(4), _kept)
    code = (
        "import json; from tests.plane.gateway.test_compress_cache_safe import _session, _kept;"
        "from plane.gateway.compress import compress_messages;"
        "print(json.dumps(compress_messages(_session(4), _kept)[0]))"
    )
    there = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(there) == here and there.strip() == json.dumps(here)


def test_the_call_that_produced_a_result_is_its_hint() -> None:
    assert hint({"command": "git diff HEAD~1", "description": "Show the change"}) == (
        "git diff HEAD~1"
    )
    assert hint(json.dumps({"command": ["bash", "-lc", "rg -n TODO src"]})) == "rg -n TODO src"
    assert hint({"command": ["ls", "-la", "my dir"]}) == "ls -la 'my dir'"
    assert hint({"file_path": "/repo/src/app.py"}) == "cat /repo/src/app.py"
    assert hint({"pattern": "TODO"}) is None and hint("not json") is None


def test_a_file_read_is_compressed_as_the_file_it_is() -> None:
    """Without its call, the start of a Python module whose docstring lists at the margin
    (`- A shallow copy…`) reads as a listing; with the Read call's `file_path` as the
    hint, as Python."""
    source = Path(copy.__file__).read_text()[:6000].rsplit("\n", 1)[0]
    read = {"type": "tool_use", "id": "toolu_r", "name": "Read", "input": {}}
    read["input"] = {"file_path": "/repo/copy.py"}
    result = {"type": "tool_result", "tool_use_id": "toolu_r", "content": source}
    body = {
        "messages": [
            {"role": "assistant", "content": [read]},
            {"role": "user", "content": [result]},
        ]
    }
    sent, _ = compress_messages(body, _kept)
    hinted = compress(source, command="cat /repo/copy.py")
    assert hinted.compressor == "source" and compress(source).compressor != "source"
    assert sent["messages"][1]["content"][0]["content"] == hinted.text


def test_chat_and_responses_results_take_their_calls_as_hints() -> None:
    call: dict[str, Any] = {
        "id": "c1",
        "type": "function",
        "function": {"name": "shell", "arguments": ""},
    }
    call["function"]["arguments"] = json.dumps({"command": ["bash", "-lc", "git diff"]})
    chat = {
        "messages": [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": DIFF},
        ]
    }
    sent, _ = compress_chat(chat, _kept)
    assert sent["messages"][1]["content"] == compress(DIFF, command="git diff").text
    responses = {
        "input": [
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": DIFF},
        ]
    }
    responses["input"][0]["arguments"] = json.dumps({"command": ["bash", "-lc", "git diff"]})
    sent, _ = compress_responses(responses, _kept)
    assert sent["input"][1]["output"] == compress(DIFF, command="git diff").text


def test_compression_is_on_by_default_and_an_agent_can_turn_it_off() -> None:
    base = """
providers:
  up: {kind: anthropic, base_url: "http://127.0.0.1:9"}
agents:
  claude: {provider: up, gateway: %s}
"""
    on = parse_config(base % "{}").agents["claude"].gateway
    off = parse_config(base % "{compress: false}").agents["claude"].gateway
    assert on is not None and on.compress is True
    assert off is not None and off.compress is False


def test_the_results_remembered_stay_under_their_bound() -> None:
    """A client resends its history every call, so results are remembered; what the
    table holds is bounded in characters, the least recently used going first."""
    table = Remembered(3 * len(PYTEST_LOG))
    for n in range(10):
        table.compress(f"{n}\n{PYTEST_LOG}", None)
        assert table.held <= 3 * len(PYTEST_LOG)
    first = table.compress(f"9\n{PYTEST_LOG}", None)
    assert table.compress(f"9\n{PYTEST_LOG}", None) is first, "the last one is remembered"
    assert first == compress(f"9\n{PYTEST_LOG}")


CALLED_NOT_ANSWERED: dict[str, dict[str, Any]] = {
    "/v1/messages": {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Run the tests."}]},
            {"role": "assistant", "content": _step(1, "pytest", PYTEST_LOG)[0]["content"]},
        ]
    },
    "/v1/chat/completions": {
        "messages": [
            {"role": "user", "content": "Run the tests."},
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "c1", "function": {"name": "sh", "arguments": '{"command": "pytest"}'}}
                ],
            },
        ]
    },
    "/v1/responses": {
        "input": [
            {"role": "user", "content": "Run the tests."},
            {"type": "function_call", "call_id": "c1", "arguments": '{"cmd": "pytest"}'},
        ]
    },
}
RESULTS: dict[str, dict[str, Any]] = {
    "/v1/messages": {"type": "tool_result", "tool_use_id": "toolu_1", "content": PYTEST_LOG},
    "/v1/chat/completions": {"role": "tool", "tool_call_id": "c1", "content": PYTEST_LOG},
    "/v1/responses": {"type": "function_call_output", "call_id": "c1", "output": PYTEST_LOG},
}


def test_a_request_with_no_tool_result_is_one_compression_passes_as_it_came() -> None:
    """The gateway compresses in a thread only a request that carries a tool
    result: one that carries none (a tool called, its result not yet back)
    is what compression would have sent anyway, and one with a result is
    always handed to it."""
    for path, wire in WIRES.items():
        plain = copy.deepcopy(CALLED_NOT_ANSWERED[path])
        assert not wire.has_results(plain), path
        assert wire.compressed(plain, _kept) == (CALLED_NOT_ANSWERED[path], 0), path
        answered = copy.deepcopy(plain)
        result = RESULTS[path]
        if path == "/v1/messages":
            answered["messages"].append({"role": "user", "content": [result]})
        else:
            answered["messages" if "messages" in answered else "input"].append(result)
        assert wire.has_results(answered), path
        assert wire.compressed(answered, _kept)[1] > 0, path
