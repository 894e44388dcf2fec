"""What an MCP tool returned, as the text a model reads.

Text comes through as it is; what a text model cannot read (an image, audio,
a binary resource) is named in a marker with its size, never pasted as
base64. A result with no content but structured content reads as its JSON.
The whole is capped as `run_command`'s output is: its start and end kept, a
marker saying how much was cut.
"""

from __future__ import annotations

import base64
import json

import mcp_types

from plane.tools.capture import HeadTail
from plane.tools.shell import OUTPUT_CAP


def as_text(result: mcp_types.CallToolResult) -> str:
    parts = [_block(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    return capped("\n".join(parts))


def capped(text: str) -> str:
    captured = HeadTail(OUTPUT_CAP)
    captured.write(text.encode("utf-8", errors="replace"))
    return captured.text()


def _block(block: mcp_types.ContentBlock) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        kind = "image" if isinstance(block, mcp_types.ImageContent) else "audio"
        return f"[{kind} {block.mime_type}, {_size(block.data)} not shown]"
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource {block.uri}]"
    resource = block.resource
    if isinstance(resource, mcp_types.TextResourceContents):
        return resource.text
    return f"[resource {resource.uri}, {_size(resource.blob)} of binary not shown]"


def _size(data: str) -> str:
    """The decoded size of base64 `data`, in words."""
    try:
        count = len(base64.b64decode(data, validate=False))
    except ValueError:
        count = len(data)
    return f"{count:,} bytes"
