"""On Anthropic, where caching is explicit, every call marks where its prompt
ends, so the next call of the session reads what this one wrote (the system
prompt alone was marked before, and each turn paid full price for the rest)."""

from plane.wire.protocol import Usage
from tests.support.fixtures_plane import CONFIG

ANTHROPIC = CONFIG.replace(
    "kind: openai-compatible\n    base_url: {base_url}",
    "kind: anthropic\n    base_url: {anthropic}",
)
CHEAP = Usage(input_tokens=10, output_tokens=2)


def marked(body: dict) -> list[int]:
    """Indexes of the wire messages whose last block carries a breakpoint."""
    return [
        i
        for i, message in enumerate(body["messages"])
        if isinstance(message["content"], list) and "cache_control" in message["content"][-1]
    ]


async def test_each_call_marks_the_end_of_its_prompt(start_plane, scripted_llm):
    plane = await start_plane(ANTHROPIC.replace("{anthropic}", scripted_llm.anthropic_url))
    scripted_llm.reply("First answer.", usage=CHEAP)
    await plane.turn("demo", "hello")
    scripted_llm.reply("Second answer.", usage=CHEAP)
    await plane.turn("demo", "and then?")
    first, second = scripted_llm.requests
    assert marked(first) == [len(first["messages"]) - 1]
    assert len(second["messages"]) > len(first["messages"])
    assert len(second["messages"]) - 1 in marked(second)
