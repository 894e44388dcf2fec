"""A model that writes a lone surrogate (`\\udcff`): valid JSON, not text.

JSON may escape half of a UTF-16 pair on its own; decoded, it is a string no
store, file or socket can encode. What a model writes is bad input like any
other: the turn goes on, with the broken character shown as U+FFFD, and it is
answered and costed as usual.
"""

from __future__ import annotations

from plane.wire.protocol import Usage

CENT = Usage(input_tokens=10)  # $0.01 at the test prices


def tool_results(request):
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


async def test_an_answer_with_a_lone_surrogate_is_shown_and_costed(start_plane):
    plane = await start_plane()
    plane.llm.reply("Done \udcff here.", usage=CENT)
    said = await plane.turn("demo", "go")
    assert [(m.kind, m.text) for m in said][1:] == [
        ("agent", "Done \ufffd here."),
        ("cost", "$0.01 · 10 in · 0 out"),
    ]
    plane.llm.reply("Again.", usage=CENT)
    await plane.turn("demo", "once more")
    assert "Done \ufffd here." in str(plane.llm.requests[-1]["messages"])


async def test_tool_arguments_with_a_lone_surrogate_reach_the_tool_as_text(start_plane):
    plane = await start_plane()
    plane.llm.reply("", tool_calls=[("read_file", {"path": "notes\udcff.md"})], usage=CENT)
    plane.llm.reply("", tool_calls=[("retrieve", {"ref": "k_\ud800"})], usage=CENT)
    plane.llm.reply("No such file.", usage=CENT)
    said = await plane.turn("demo", "read it")
    assert said[-2:][0].text == "No such file."
    assert said[-1].text.startswith("$0.03 ·")
    missing, unknown = tool_results(plane.llm.requests[-1])
    assert "notes\ufffd.md" in missing and "does not exist" in missing
    assert unknown.startswith("Unknown or expired ref 'k_\ufffd'")
