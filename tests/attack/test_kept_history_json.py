"""Attacks on the history JSON kept between calls: histories that share
their first message, one too large to keep, a message no encoder can
write. Every body is still the one written whole, or fails as it did."""

from __future__ import annotations

import orjson
import pytest

from plane.providers.base import ChatMessage, CompletionRequest
from plane.providers.connections import json_body
from plane.providers.encoded import EncodedHistories
from plane.providers.openai import OpenAIProvider, wire_message


def whole(history: list[ChatMessage]) -> bytes:
    return orjson.dumps([wire_message(m) for m in history])[1:-1]


def test_two_histories_sharing_their_first_message_each_encode_as_themselves():
    shared = ChatMessage("user", "the same founding message")
    one, two = [shared], [shared]
    histories = EncodedHistories(wire_message)
    for n in range(30):
        one.append(ChatMessage("assistant", f"one {n}"))
        two.append(ChatMessage("assistant", f"two {n}" * (n % 3)))
        assert histories.join(one) == whole(one)
        assert histories.join(two) == whole(two)
        assert histories.join(one[: n // 2 + 1]) == whole(one[: n // 2 + 1])


def test_a_history_larger_than_what_is_kept_is_written_whole_each_time():
    histories = EncodedHistories(wire_message, kept_bytes=1000)
    small = [ChatMessage("user", "small")]
    histories.join(small)
    large = [ChatMessage("user", "x" * 600), ChatMessage("assistant", "y" * 600)]
    for _ in range(3):
        assert histories.join(large) == whole(large)
        assert histories.kept_bytes <= 1000
    large.append(ChatMessage("user", "z"))
    assert histories.join(large) == whole(large)
    assert histories.join(small) == whole(small)


def test_a_message_no_encoder_writes_fails_as_the_whole_body_did():
    """A lone surrogate (text cut in the middle of a pair) is not UTF-8:
    orjson refuses it, and the standard library's fallback cannot encode it."""
    provider = OpenAIProvider("p", base_url="http://127.0.0.1:9/v1")
    fine = ChatMessage("user", "fine")
    broken = ChatMessage("assistant", "half a pair: \ud83d")
    request = CompletionRequest(model="m", system="s", messages=(fine, broken))
    with pytest.raises(UnicodeEncodeError):
        json_body(provider.body(request))
    with pytest.raises(UnicodeEncodeError):
        provider.encode(request)
    after = CompletionRequest(model="m", system="s", messages=(fine, ChatMessage("user", "ok")))
    assert provider.encode(after) == json_body(provider.body(after))
