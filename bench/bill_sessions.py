"""Sessions shaped like real agents', and what a provider charges for them.

The pieces of bench/bill.py that are not the plane:

- `Material`: a system prompt of ~15K tokens and a tool list of realistic
  size (prose from this repository's README, which reads like an agent's
  instructions: rules, commands, tables), and answers of realistic length
  (one to six sentences before each tool call, a longer one at the end).
- `steps_of`: each session's tool calls, outputs of real commands from a
  corpus (manifest.jsonl: id, category, path, command), in a fixed order.
- `claude_code` and `codex`: a session's requests as each client sends them
  on the wire. Claude Code (Anthropic Messages): a `Bash` call per command,
  a `Read` call per `cat FILE` (its result numbered `     1→…`, at most
  2,000 lines), Bash output cut at 30,000 characters, `cache_control` on the
  system prompt and on the last block of the last message. Codex (OpenAI
  Responses): a `shell` call with `["bash", "-lc", command]`, its output
  framed `Exit code / Wall time / Output:` and cut to 256 lines (head and
  tail) and 10 KiB, automatic prefix caching.
- `Cache`: one session's prompt cache at the provider, priced by each API's
  rules (Anthropic: a prefix up to a breakpoint that an earlier request wrote
  is read at 0.1× the input price, the rest up to the last breakpoint written
  at 1.25×, 1,024 tokens at least; OpenAI: the longest prefix shared with an
  earlier request, from 1,024 tokens in steps of 128, at the cached price).
  Tokens are ceil(characters / 4).
- `Headroom`: Headroom as its proxy runs a session (compress_headroom.py
  --proxy), in its own venv.
"""

from __future__ import annotations

import hashlib
import json
import math
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plane.wire.protocol import Usage

ROOT = Path(__file__).resolve().parents[1]
MIN_CACHE = 1024
OPENAI_STEP = 128
SYSTEM_TOKENS = 15_000
TOOL_NAMES = ("Bash", "Read", "Edit", "Write", "Glob", "Grep", "TodoWrite", "Task", "WebFetch")
BASH_LIMIT = 30_000
READ_LINES = 2000
CODEX_LINES = 256
CODEX_BYTES = 10 * 1024
SENTENCES = (
    "Let me look at what this prints before changing anything.",
    "The failure comes from the second call, not the first one.",
    "I will check the configuration next, since the defaults may differ here.",
    "That matches what the test expects, so the bug is further down.",
    "The listing shows the file we need; reading it now.",
    "Nothing in the log points at the network, so I will rule that out.",
    "This version pins an older release, which explains the warning.",
    "I should confirm the fix by running the narrower test first.",
    "The diff touches three files; the one that matters is the parser.",
    "Good, the build is clean now, but one deprecation warning remains.",
    "Searching for other callers before renaming the function.",
    "The error names a path that does not exist on this machine.",
)


def tokens(chars: int) -> int:
    return math.ceil(chars / 4)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# ── what the agent says and runs ────────────────────────────────────────────


@dataclass(frozen=True)
class Step:
    command: str
    output: str
    file: str | None  # the file a `cat FILE` read, for a client's Read tool


@dataclass(frozen=True)
class Material:
    system: str
    tools: list[dict[str, Any]]

    @staticmethod
    def make() -> Material:
        prose = (ROOT / "README.md").read_text(encoding="utf-8")
        while len(prose) < 4 * SYSTEM_TOKENS * 2:
            prose += "\n" + prose
        system = "You are an agent working in the user's repository.\n\n" + prose
        system = system[: 4 * SYSTEM_TOKENS]
        rest = prose[4 * SYSTEM_TOKENS :]
        tools = []
        for n, name in enumerate(TOOL_NAMES):
            description = rest[n * 1200 : (n + 1) * 1200]
            schema = {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "What to run."},
                    "file_path": {"type": "string", "description": "An absolute path."},
                    "description": {"type": "string", "description": "What it is for."},
                },
            }
            tools.append({"name": name, "description": description, "input_schema": schema})
        return Material(system, tools)


def answer(session: int, step: int, final: bool = False) -> str:
    """What the model says before a call: one to six sentences, chosen by a hash; a
    longer closing answer (twenty) at the end of a session."""
    seed = int(_digest(f"{session}/{step}")[:8], 16)
    n = 20 if final else 1 + seed % 6
    return " ".join(SENTENCES[(seed // 7 + i * 5) % len(SENTENCES)] for i in range(n))


def steps_of(corpus: Path, sessions: int, per_session: int) -> list[list[Step]]:
    """The corpus's samples in a fixed shuffled order (by their ids' hashes), dealt out
    `per_session` a session (from the start again when there are too few)."""
    with open(corpus / "manifest.jsonl", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    rows.sort(key=lambda row: _digest(row["id"]))
    out = []
    for s in range(sessions):
        session = []
        for k in range(per_session):
            row = rows[(s * per_session + k) % len(rows)]
            raw = (corpus / row["path"]).read_bytes().decode("utf-8", "surrogateescape")
            text = raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            command = row.get("command") or "true"
            session.append(Step(command, text, _read_file(command)))
        out.append(session)
    return out


def _read_file(command: str) -> str | None:
    """The file a plain `cat [-n] FILE` prints, or None."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if (len(words) == 2 and words[0] == "cat") or (len(words) == 3 and words[:2] == ["cat", "-n"]):
        return words[-1]
    return None


# ── the clients' requests ───────────────────────────────────────────────────


def _claude_result(step: Step) -> str:
    if step.file is not None:
        lines = step.output.split("\n")[:READ_LINES]
        return "\n".join(f"{n:>6}→{line}" for n, line in enumerate(lines, 1))
    if len(step.output) <= BASH_LIMIT:
        return step.output
    cut = step.output[BASH_LIMIT:].count("\n")
    return step.output[:BASH_LIMIT] + f"\n\n... [{cut} lines truncated] ..."


def claude_code(material: Material, session: int, steps: list[Step]) -> list[dict[str, Any]]:
    """Each request of a Claude Code session, and (as `reply`) what the model answered."""
    system = [{"type": "text", "text": material.system, "cache_control": {"type": "ephemeral"}}]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": f"Task {session}: fix the build."}]}
    ]
    requests = []
    for k in range(len(steps) + 1):
        marked = json.loads(json.dumps(messages))
        marked[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        body = {"model": "claude-sonnet-4-5", "max_tokens": 32000, "system": system}
        body |= {"tools": material.tools, "messages": marked}
        if k == len(steps):
            reply = [{"type": "text", "text": answer(session, k, final=True)}]
            requests.append({"body": body, "reply": reply})
            break
        step = steps[k]
        call = {"type": "tool_use", "id": f"toolu_{session:02}_{k:03}", "name": "Bash"}
        call["input"] = {"command": step.command, "description": "Run it"}
        if step.file is not None:
            call |= {"name": "Read", "input": {"file_path": step.file}}
        reply = [{"type": "text", "text": answer(session, k)}, call]
        requests.append({"body": body, "reply": reply})
        result = {"type": "tool_result", "tool_use_id": call["id"], "content": ""}
        result["content"] = _claude_result(step)
        messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": [result]}]
    return requests


def _codex_output(step: Step) -> str:
    lines = step.output.split("\n")
    if len(lines) > CODEX_LINES:
        half = CODEX_LINES // 2
        omitted = f"[... omitted {len(lines) - CODEX_LINES} of {len(lines)} lines ...]"
        lines = [*lines[:half], omitted, *lines[-half:]]
    body = "\n".join(lines)
    if len(body.encode()) > CODEX_BYTES:
        body = body.encode()[:CODEX_BYTES].decode("utf-8", "ignore")
    return f"Exit code: 0\nWall time: 0.4 seconds\nOutput:\n{body}"


def codex(material: Material, session: int, steps: list[Step]) -> list[dict[str, Any]]:
    """Each request of a Codex session (Responses API), and its `reply` items."""
    tools = [
        {"type": "function", "name": t["name"].lower(), "description": t["description"]}
        | {"parameters": t["input_schema"]}
        for t in material.tools
    ]
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ""}]}
    ]
    items[0]["content"][0]["text"] = f"Task {session}: fix the build."
    requests = []
    for k in range(len(steps) + 1):
        body = {"model": "gpt-5", "instructions": material.system, "tools": tools}
        body["input"] = json.loads(json.dumps(items))
        said = {"type": "message", "role": "assistant", "content": []}
        said["content"] = [{"type": "output_text", "text": answer(session, k, k == len(steps))}]
        if k == len(steps):
            requests.append({"body": body, "reply": [said]})
            break
        step = steps[k]
        arguments = json.dumps({"command": ["bash", "-lc", step.command]})
        call = {"type": "function_call", "call_id": f"call_{session:02}_{k:03}", "name": "shell"}
        call["arguments"] = arguments
        requests.append({"body": body, "reply": [said, call]})
        output = {"type": "function_call_output", "call_id": call["call_id"]}
        output["output"] = _codex_output(step)
        items += [said, call, output]
    return requests


def output_chars(reply: list[dict[str, Any]]) -> int:
    """What the model generated: its text and its calls' input."""
    chars = 0
    for item in reply:
        for key in ("text", "arguments"):
            chars += len(item.get(key) or "")
        chars += len(json.dumps(item["input"])) if "input" in item else 0
        chars += sum(len(part.get("text", "")) for part in item.get("content") or [])
    return chars


# ── the provider's side ─────────────────────────────────────────────────────


@dataclass
class Cache:
    """One session's prompt cache at the provider."""

    api: str  # "anthropic" or "openai"
    seen: list[str] = field(default_factory=list)
    written: set[str] = field(default_factory=set)

    def usage(self, body: dict[str, Any], out_chars: int) -> Usage:
        usage = self._anthropic(body) if self.api == "anthropic" else self._openai(body)
        return usage.model_copy(update={"output_tokens": tokens(out_chars)})

    def _openai(self, body: dict[str, Any]) -> Usage:
        keys = ("instructions", "tools", "input", "messages")
        prompt = json.dumps([body.get(key) for key in keys], sort_keys=True)
        shared = max((_common(prompt, earlier) for earlier in self.seen), default=0)
        self.seen.append(prompt)
        total, cached = tokens(len(prompt)), tokens(shared)
        if total < MIN_CACHE or cached < MIN_CACHE:
            cached = 0
        else:
            cached = MIN_CACHE + (cached - MIN_CACHE) // OPENAI_STEP * OPENAI_STEP
        return Usage(input_tokens=total, cache_read_tokens=min(cached, total))

    def _anthropic(self, body: dict[str, Any]) -> Usage:
        """Blocks in Anthropic's cache order (tools, system, messages). Each breakpoint
        writes the prefix that ends there; a request reads the longest prefix an earlier
        one wrote that ends at one of its own block boundaries up to its last breakpoint,
        and writes the rest up to it."""
        pieces, marks = _anthropic_pieces(body)
        digests, bounds = [], []
        running = hashlib.sha256()
        end = 0
        for piece in pieces:
            running.update(piece.encode("utf-8", "surrogatepass"))
            end += len(piece)
            digests.append(running.hexdigest())
            bounds.append(end)
        last = marks[-1] if marks else -1
        read = 0
        for i in range(last + 1):
            if digests[i] in self.written:
                read = bounds[i]
        for i in marks:
            if tokens(bounds[i]) >= MIN_CACHE:
                self.written.add(digests[i])
        upto = bounds[last] if marks else 0
        write = upto - read if tokens(upto) >= MIN_CACHE else 0
        total = tokens(end)
        return Usage(
            input_tokens=total,
            cache_read_tokens=tokens(read),
            cache_write_tokens=min(tokens(write), total - tokens(read)),
        )


def _anthropic_pieces(body: dict[str, Any]) -> tuple[list[str], list[int]]:
    pieces: list[str] = [json.dumps(body.get("tools"), sort_keys=True)]
    marks: list[int] = []
    system = body.get("system") or []
    blocks = [*([{"text": system}] if isinstance(system, str) else system)]
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            blocks.append({"text": content, "role": message.get("role")})
        else:
            blocks.extend(content or [])
    for block in blocks:
        clean = {k: v for k, v in block.items() if k != "cache_control"}
        pieces.append(json.dumps(clean, sort_keys=True))
        if "cache_control" in block:
            marks.append(len(pieces) - 1)
    return pieces, marks


def _common(a: str, b: str) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:  # the longest common prefix, by bisection on slices (fast in C)
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


# ── Headroom, as its proxy runs ─────────────────────────────────────────────


class Headroom:
    """Headroom's proxy emulation (compress_headroom.py --proxy) in its own venv."""

    def __init__(self, python: Path) -> None:
        script = ROOT / "bench" / "compress_headroom.py"
        self.process = subprocess.Popen(
            [str(python), str(script), "--proxy"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def forward(
        self, session: str, messages: list[dict[str, Any]], model: str, frozen: int
    ) -> list[dict[str, Any]]:
        """The messages Headroom's proxy would forward for this request of `session`."""
        assert self.process.stdin is not None and self.process.stdout is not None
        request = {"session": session, "messages": messages, "model": model, "frozen": frozen}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        found: list[dict[str, Any]] = json.loads(self.process.stdout.readline())["messages"]
        return found

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def responses_as_chat(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Responses `input` as Chat Completions messages (what Headroom compresses for an
    OpenAI client), one message an item, so results map back by position."""
    out: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type")
        if kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]})
        elif kind == "function_call":
            function = {"name": item["name"], "arguments": item["arguments"]}
            call = {"id": item["call_id"], "type": "function", "function": function}
            out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        else:
            text = "".join(part.get("text", "") for part in item.get("content") or [])
            out.append({"role": item.get("role", "user"), "content": text})
    return out


def chat_back(items: list[dict[str, Any]], chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Headroom's tool messages put back into the Responses items they came from."""
    return [
        {**item, "output": message["content"]}
        if item.get("type") == "function_call_output" and isinstance(message.get("content"), str)
        else item
        for item, message in zip(items, chat, strict=True)
    ]
