"""What the things agents.yaml names may be called: an agent, an MCP server
and its tools, a group, a tag, an environment variable, the embedded
provider and its model. A pattern has its rule beside it, the words an
error says when a name is not one."""

from __future__ import annotations

import re

EMBEDDED = "embedded"
"""The provider name of the model the plane runs itself (llama.cpp, SmolLM2)."""
EMBEDDED_MODEL = "smollm2-135m"

AGENT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
AGENT_NAME_RULE = (
    "1–32 characters: lower-case letters, digits, '-' and '_', starting with a letter or digit"
)


def agent_name_refused(name: str) -> str | None:
    """Why `name` cannot name an agent (None: it can): what a name may be,
    which an empty one asked for (`'' is not a valid name` read as a riddle)."""
    if AGENT_NAME.match(name):
        return None
    if not name.strip():
        return f"Give the agent a name: {AGENT_NAME_RULE}."
    return f"{name!r} is not a valid name: {AGENT_NAME_RULE}."


ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


MCP_SERVER_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]|_(?!_)){0,23}$")
MCP_SERVER_RULE = (
    "1–24 characters: lower-case letters, digits, '-' and single '_', starting with a letter "
    "or digit"
)
MCP_TOOL = re.compile(r"^(?P<server>[^.]+)\.(?P<tool>\*|[A-Za-z0-9_.\-]{1,128})$")
"""An MCP tool in an allowlist: `server.tool`, or `server.*` for all of a server's."""

GROUP_NAME = AGENT_NAME
GROUP_NAME_RULE = AGENT_NAME_RULE

TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,63}$")
TAG_RULE = "1–64 characters: letters, digits and . _ : @ / + = -, starting with a letter or digit"
"""What a gateway call's tag may be (`x-plane-tag`, or the client's metadata):
short and plain, so it reads in a line of the conversation and a label of
/metrics, and no header can smuggle anything into either."""
