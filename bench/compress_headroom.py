"""Run Headroom (its defaults) on every corpus sample; runs inside bench/.venv-headroom.

Each output is sent as what it is in an agent's conversation: a tool result
after the call that produced it, followed by a few later turns so that
Headroom's `protect_recent` (the last 4 messages) does not shield it. The
model name only picks Headroom's token counter. HF_HUB_OFFLINE stops it from
trying to download its optional ML model (this machine has no network); the
issue's figures for Headroom (~0.7 ms/KB) are without it too.

Writes one JSON object per sample to the file named by argv[2]:
{"id", "text", "ms"}. With `--timed` it compresses, and times, one sample per
line of stdin instead (bench/compress.py's interleaved timing). With
`--proxy` it runs as Headroom's proxy does for a session (bench/bill.py).
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


def proxy() -> None:
    """`--proxy`: Headroom as its proxy runs a session (headroom/proxy/session_engine.py,
    the Anthropic handler): one JSON object a line on stdin ({"session", "messages",
    "model", "frozen"}: `frozen` the leading messages the provider confirmed cached, the
    whole previous request in a session whose every request marks its end), the messages
    to forward a line on stdout. Per session, Headroom's own `CompressionCache`: the
    frozen prefix is clamped to what the cache can replay, results compressed before are
    swapped in ("Zone 1"), the pipeline runs with `frozen_message_count` (the live zone
    only), new compressions are remembered, and Headroom's own `finalize_turn` replays
    what the previous request forwarded over the messages the provider confirmed
    cached, byte for byte."""
    import logging

    logging.disable(logging.WARNING)
    from headroom import compress
    from headroom.cache.compression_cache import CompressionCache
    from headroom.proxy.session_engine import finalize_turn

    caches: dict[str, CompressionCache] = {}
    sent: dict[str, tuple[list[dict] | None, list[dict] | None]] = {}
    for line in sys.stdin:
        request = json.loads(line)
        session, messages = request["session"], request["messages"]
        cache = caches.setdefault(session, CompressionCache())
        frozen = min(request["frozen"], cache.compute_frozen_count(messages))
        cache.mark_stable_from_messages(messages, frozen)
        working = cache.apply_cached(messages)
        result = compress(working, model=request["model"], frozen_message_count=frozen)
        out = result.messages
        if out != working:
            cache.update_from_result(messages, out)
        before, forwarded = sent.get(session, (None, None))
        final = finalize_turn(
            out, messages, before, forwarded, confirmed_frozen_count=request["frozen"]
        )
        out = _marks_as_sent(final.messages, messages)
        sent[session] = (messages, out)
        sys.stdout.write(json.dumps({"messages": out}) + "\n")
        sys.stdout.flush()


def _marks_as_sent(out: list[dict], messages: list[dict]) -> list[dict]:
    """The client's `cache_control` breakpoints where this request had them: the replayed
    prefix carries last request's mark too, which the proxy does not send again (no more
    than four are allowed)."""

    def blocks(message: dict) -> list:
        content = message.get("content")
        return content if isinstance(content, list) else []

    for sent, asked in zip(out, messages, strict=True):
        for block, original in zip(blocks(sent), blocks(asked), strict=False):
            if isinstance(block, dict) and isinstance(original, dict):
                block.pop("cache_control", None)
                if "cache_control" in original:
                    block["cache_control"] = original["cache_control"]
    return out


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
    if sys.argv[1:] == ["--timed"]:
        timed()
        return
    if sys.argv[1:] == ["--proxy"]:
        proxy()
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
