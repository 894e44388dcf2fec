"""What of an MCP server's tool list a model is offered, and how its results
read: names a provider takes, schemas that fit, output that is text."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from plane.tools.mcp import names
from plane.tools.mcp.sessions import MAX_DESCRIPTION_CHARS, offerable

if TYPE_CHECKING:
    import mcp_types

# The MCP SDK's types are imported by the tests that use them, not here: every
# worker collects this module, and the SDK takes a fifth of a CPU-second to import.
pytestmark = pytest.mark.xdist_group("mcp-sdk")
"""On the one worker the tests that start MCP servers load the SDK on."""


def tool(name: str, schema: dict | None = None, description: str = "Does it.") -> mcp_types.Tool:
    import mcp_types

    return mcp_types.Tool(
        name=name,
        description=description,
        input_schema=schema if schema is not None else {"type": "object", "properties": {}},
    )


def test_a_wire_name_is_one_a_provider_takes_and_names_its_server_first():
    assert names.wire_name("time", "get_current_time") == "time__get_current_time"
    assert names.wire_name("gh", "repos.list/all") == "gh__repos_list_all"
    assert names.wire_name("s", "x" * 70) is None
    assert names.shown("time", "get_current_time") == "time.get_current_time"


def test_the_allowlist_takes_a_whole_server_or_one_of_its_tools():
    assert names.allows(None, "time", "now")
    assert names.allows(["time.*"], "time", "now")
    assert names.allows(["time.now"], "time", "now")
    assert not names.allows(["time.now"], "time", "then")
    assert not names.allows(["read_file", "times.*"], "time", "now")
    assert names.may_allow(["time.now"], "time") and not names.may_allow(["read_file"], "time")


def test_tools_a_model_cannot_be_offered_safely_are_left_out(caplog):
    listed = [
        tool("zeta"),
        tool("alpha", description="A" * 5000),
        tool("not-an-object", {"type": "string"}),
        tool(
            "huge",
            {"type": "object", "properties": {f"p{n}": {"type": "string"} for n in range(2000)}},
        ),
        tool("x" * 70),
        tool("a.b"),
        tool("a_b"),  # the same name as `a.b` once made safe
    ]
    allowed = ("srv.*",)
    offered = offerable("srv", listed, allowed)
    assert [t.spec.name for t in offered] == ["srv__zeta", "srv__alpha", "srv__a_b"]
    assert [t.tool for t in offered] == ["zeta", "alpha", "a.b"]
    assert len(offered[1].spec.description) == MAX_DESCRIPTION_CHARS
    assert offered[1].spec.description.endswith("…")
    why = caplog.text
    assert "not-an-object is not offered: its input schema is not an object" in why
    assert "huge is not offered: its input schema is over 16,000 characters" in why
    assert "its name is too long" in why and "has the same name once made safe" in why
    assert [t.tool for t in offerable("srv", listed, ("srv.zeta",))] == ["zeta"]


def test_the_same_listing_gives_the_same_bytes_whatever_its_key_order():
    a = tool("t", {"type": "object", "properties": {"b": {"type": "string"}, "a": {}}})
    b = tool("t", {"properties": {"a": {}, "b": {"type": "string"}}, "type": "object"})
    [one], [two] = offerable("s", [a], None), offerable("s", [b], None)
    assert json.dumps(one.spec.parameters) == json.dumps(two.spec.parameters)


def test_a_result_reads_as_text_with_what_a_model_cannot_read_named():
    import mcp_types

    from plane.tools.mcp.results import as_text

    result = mcp_types.CallToolResult(
        content=[
            mcp_types.TextContent(text="hello"),
            mcp_types.ImageContent(data="aGVsbG8=", mime_type="image/png"),
            mcp_types.ResourceLink(uri="file:///x.txt", name="x"),
            mcp_types.EmbeddedResource(
                resource=mcp_types.TextResourceContents(uri="file:///y", text="inside")
            ),
        ]
    )
    assert (
        as_text(result)
        == "hello\n[image image/png, 5 bytes not shown]\n[resource file:///x.txt]\ninside"
    )
    structured = mcp_types.CallToolResult(content=[], structured_content={"n": 1})
    assert json.loads(as_text(structured)) == {"n": 1}


def test_a_large_result_keeps_its_start_and_end():
    import mcp_types

    from plane.tools.mcp.results import as_text

    lines = "".join(f"line {n}\n" for n in range(100_000))
    text = as_text(mcp_types.CallToolResult(content=[mcp_types.TextContent(text=lines)]))
    assert len(text) < 70_000 and text.startswith("line 0\n") and text.endswith("line 99999\n")
    assert "cut from the middle" in text
