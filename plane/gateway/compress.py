"""Compression inside a gateway agent's requests (on unless `gateway: {compress: false}`).

Only tool results pass through the engine — Anthropic `tool_result` blocks,
OpenAI `tool` messages and Responses `function_call_output` items — never
system, user or assistant text. A result the client marked for its prompt
cache (`cache_control`) is compressed like any other, its mark kept where it
was: the engine is deterministic (no clock, no randomness, no set order, and
nothing read from the rest of the request but the call that produced the
result), so a result gives the same bytes in every request that carries it.
The prefix the provider cached from the last request is the prefix of the
next one, byte for byte, whichever block the client marks this time.

The call that produced a result is its hint: the tool call's `command` (a
shell string, or Codex's argv list) or the file it read (`cat PATH`), so a
`git diff` is read as a diff and a `.py` file as Python.

What compression left out is kept in the plane's ref store, as for the
plane's own agents, and is reached with `plane retrieve REF` (or `plane
expand`). The gateway does not offer the model a `retrieve` tool of its own:
answering a tool call inside a stream the client is already reading would
mean holding back or rewriting the model's reply, and a call the client's
own loop cannot see breaks clients that check tool ids against their
history (Claude Code does).

A client resends its whole history with every call, so the same results come
back again and again: each is compressed once and remembered (by its bytes
and hint) for the calls after, as a bounded table.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from plane.economy.compress.engine import Compressed, compress

Keep = Callable[[dict[str, str]], None]
"""Where what was left out goes (the ref store)."""

REMEMBERED_CHARS = 16_000_000
"""How much the table of results compressed before may hold (what they were and what
they became): a few long sessions' worth of tool output, tens of MB at most."""


class Remembered:
    """The engine's answers by (hint, result); safe to share since the engine is
    deterministic. Keyed by a digest so the table does not hold every text twice;
    the least recently used go first once it holds more than `size` characters."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.held = 0
        self._found: OrderedDict[bytes, Compressed] = OrderedDict()
        self._lock = threading.Lock()

    def compress(self, text: str, command: str | None) -> Compressed:
        key = hashlib.sha256(f"{command or ''}\0{text}".encode("utf-8", "surrogatepass")).digest()
        with self._lock:
            found = self._found.get(key)
            if found is not None:
                self._found.move_to_end(key)
                return found
        found = compress(text, command=command)
        with self._lock:
            if key not in self._found:
                self._found[key] = found
                self.held += _weight(found)
            while self.held > self.size and self._found:
                _, gone = self._found.popitem(last=False)
                self.held -= _weight(gone)
        return found


def _weight(found: Compressed) -> int:
    return found.chars_in + found.chars_out


_REMEMBERED = Remembered(REMEMBERED_CHARS)


class _Pass:
    def __init__(self, keep: Keep) -> None:
        self.keep = keep
        self.saved = 0

    def text(self, text: str, command: str | None) -> str:
        result = _REMEMBERED.compress(text, command)
        if result.refs:
            self.keep(result.refs)
        self.saved += max(0, result.saved)
        return result.text

    def parts(self, content: Any, command: str | None) -> Any:
        """A string, or a list of parts whose text parts are compressed (marks kept)."""
        if isinstance(content, str):
            return self.text(content, command)
        if not isinstance(content, list):
            return content
        return [
            {**part, "text": self.text(part["text"], command)} if _text(part) else part
            for part in content
        ]


def _text(part: Any) -> bool:
    is_text = isinstance(part, dict) and part.get("type") in ("text", "input_text")
    return is_text and isinstance(part.get("text"), str)


def hint(arguments: Any) -> str | None:
    """The command a tool call ran, from its input (a dict, or its JSON text): a shell
    string, an argv list (`["bash", "-lc", "git diff"]` is `git diff`), or the file it
    read, as `cat PATH`."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    command = arguments.get("command", arguments.get("cmd"))
    if isinstance(command, str) and command.strip():
        return command
    if isinstance(command, list) and command and all(isinstance(a, str) for a in command):
        argv: list[str] = command
        if len(argv) == 3 and argv[1] in ("-c", "-lc") and argv[0].endswith("sh"):
            return argv[2]
        return shlex.join(argv)
    path = arguments.get("file_path", arguments.get("path"))
    if isinstance(path, str) and path.strip():
        return f"cat {shlex.quote(path)}"
    return None


def _hints_of_messages(messages: Iterable[Any]) -> dict[str, str]:
    """tool_use id → its command, from the assistant turns of an Anthropic request."""
    found: dict[str, str] = {}
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if _role(message) != "assistant" or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                command = hint(block.get("input"))
                if command is not None and isinstance(block.get("id"), str):
                    found[block["id"]] = command
    return found


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else None


def compress_messages(body: dict[str, Any], keep: Keep) -> tuple[dict[str, Any], int]:
    """The Anthropic request with its tool results compressed; the chars saved."""
    work = _Pass(keep)
    messages = body.get("messages")
    if not isinstance(messages, list):
        return body, 0
    hints = _hints_of_messages(messages)
    out = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list) or _role(message) != "user":
            out.append(message)
            continue
        blocks = [
            {**block, "content": work.parts(block.get("content"), hints.get(_id(block)))}
            if isinstance(block, dict) and block.get("type") == "tool_result"
            else block
            for block in content
        ]
        out.append({**message, "content": blocks})
    return {**body, "messages": out}, work.saved


def messages_results(body: dict[str, Any]) -> bool:
    """Whether the Anthropic request carries a tool result (anything to compress)."""
    messages = body.get("messages")
    return isinstance(messages, list) and any(
        _role(message) == "user"
        and isinstance(content := message.get("content"), list)
        and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        for message in messages
    )


def _id(block: dict[str, Any]) -> str:
    found = block.get("tool_use_id")
    return found if isinstance(found, str) else ""


def compress_chat(body: dict[str, Any], keep: Keep) -> tuple[dict[str, Any], int]:
    """The Chat Completions request with its tool messages compressed; the chars saved."""
    work = _Pass(keep)
    messages = body.get("messages")
    if not isinstance(messages, list):
        return body, 0
    hints: dict[str, str] = {}
    for m in messages:
        calls = m.get("tool_calls") if isinstance(m, dict) else None
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, dict) else None
            command = hint(function.get("arguments")) if isinstance(function, dict) else None
            if command is not None and isinstance(call.get("id"), str):
                hints[call["id"]] = command
    out = [
        {**m, "content": work.parts(m.get("content"), hints.get(str(m.get("tool_call_id"))))}
        if _role(m) == "tool"
        else m
        for m in messages
    ]
    return {**body, "messages": out}, work.saved


def chat_results(body: dict[str, Any]) -> bool:
    """Whether the Chat Completions request carries a tool message (anything to compress)."""
    messages = body.get("messages")
    return isinstance(messages, list) and any(_role(m) == "tool" for m in messages)


def compress_responses(body: dict[str, Any], keep: Keep) -> tuple[dict[str, Any], int]:
    """The Responses request with its `function_call_output` items compressed."""
    work = _Pass(keep)
    items = body.get("input")
    if not isinstance(items, list):
        return body, 0
    hints: dict[str, str] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("call_id"), str):
            continue
        if item.get("type") == "function_call":
            command = hint(item.get("arguments"))
        elif item.get("type") == "local_shell_call":
            action = item.get("action")
            command = hint(action) if isinstance(action, dict) else None
        else:
            continue
        if command is not None:
            hints[item["call_id"]] = command
    out = [
        {**item, "output": work.parts(item.get("output"), hints.get(str(item.get("call_id"))))}
        if isinstance(item, dict) and item.get("type") == "function_call_output"
        else item
        for item in items
    ]
    return {**body, "input": out}, work.saved


def responses_results(body: dict[str, Any]) -> bool:
    """Whether the Responses request carries a `function_call_output` (anything to compress)."""
    items = body.get("input")
    return isinstance(items, list) and any(
        isinstance(item, dict) and item.get("type") == "function_call_output" for item in items
    )
