"""Run Headroom (its defaults) on every corpus sample; runs inside bench/.venv-headroom.

Each output is sent as what it is in an agent's conversation: a tool result
after the call that produced it, followed by a few later turns so that
Headroom's `protect_recent` (the last 4 messages) does not shield it. The
model name only picks Headroom's token counter. HF_HUB_OFFLINE stops it from
trying to download its optional ML model (this machine has no network); the
issue's figures for Headroom (~0.7 ms/KB) are without it too.

Writes one JSON object per sample to the file named by argv[2]:
{"id", "text", "ms"}. With `--timed` it compresses, and times, one sample per
line of stdin instead (bench/compress.py's interleaved timing).
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def conversation(command: str, output: str) -> list[dict]:
    call = {"name": "shell", "arguments": json.dumps({"command": command})}
    return [
        {"role": "user", "content": "Please run the command."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": call}],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": output},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "Thanks."},
        {"role": "assistant", "content": "You are welcome."},
        {"role": "user", "content": "Continue."},
    ]


def serve() -> None:
    """`--serve`: one JSON object a line on stdin ({"messages", "model"}), the compressed
    messages ({"messages"}) a line on stdout (bench/session_cost.py's Headroom)."""
    import logging

    logging.disable(logging.WARNING)
    from headroom import compress

    for line in sys.stdin:
        request = json.loads(line)
        result = compress(request["messages"], model=request["model"])
        sys.stdout.write(json.dumps({"messages": result.messages}) + "\n")
        sys.stdout.flush()


def timed() -> None:
    """`--timed`: one JSON object a line on stdin ({"command", "text"}), the compressed
    output and the milliseconds Headroom took on it, timed in here ({"text", "ms"}), a
    line on stdout: bench/compress.py asks for each sample between its own timings, so
    both are measured under the same load."""
    import logging

    logging.disable(logging.WARNING)
    from headroom import compress

    compress(conversation("true", "warm up " * 400), model="gpt-4o")
    for line in sys.stdin:
        request = json.loads(line)
        messages = conversation(request["command"], request["text"])
        start = time.perf_counter()
        result = compress(messages, model="gpt-4o")
        ms = (time.perf_counter() - start) * 1000
        reply = {"text": result.messages[2]["content"], "ms": ms}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def main() -> None:
    if sys.argv[1:] == ["--serve"]:
        serve()
        return
    if sys.argv[1:] == ["--timed"]:
        timed()
        return
    import logging

    logging.disable(logging.WARNING)
    from headroom import compress

    corpus, out_path = sys.argv[1], sys.argv[2]
    with open(os.path.join(corpus, "manifest.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    compress(conversation("true", "warm up " * 400), model="gpt-4o")
    with open(out_path, "w", encoding="utf-8") as out:
        for row in rows:
            with open(os.path.join(corpus, row["path"]), "rb") as f:
                text = f.read().decode("utf-8", "surrogateescape")
            start = time.perf_counter()
            result = compress(conversation(row.get("command") or "", text), model="gpt-4o")
            ms = (time.perf_counter() - start) * 1000
            compressed = result.messages[2]["content"]
            out.write(json.dumps({"id": row["id"], "text": compressed, "ms": ms}) + "\n")


if __name__ == "__main__":
    main()
