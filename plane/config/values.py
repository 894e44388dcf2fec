"""The kinds of value a key of agents.yaml takes (dollars, a ceiling in
dollars and cents, a tool's name, an http(s) URL), and `Block`, what every
block of the file is: unknown keys refused, frozen once read."""

from __future__ import annotations

import difflib
from decimal import Decimal
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from plane.config.names import MCP_SERVER_NAME, MCP_TOOL
from plane.config.wording import MONEY_EXAMPLE
from plane.wire.words import not_in_cents

Usd = Annotated[Decimal, Field(ge=0, le=1_000_000, allow_inf_nan=False, decimal_places=6)]


def _in_cents(amount: Decimal) -> Decimal:
    """A ceiling is dollars and cents, as /limit takes it: $0.001 would read
    `$0.00`, a pause by its figure, while it lets calls through. A negative
    zero (`-0.0`) is zero, as `/limit -0` is: said `$0.00`, never `$-0.00`.
    Refused in /limit's words, with the file's example (`like 5 or 0.50`)."""
    if amount != amount.quantize(Decimal("0.01")):
        raise ValueError(f"{not_in_cents(str(amount))}, {MONEY_EXAMPLE}")
    return amount.copy_abs() if amount == 0 else amount


Limit = Annotated[Usd, AfterValidator(_in_cents)]


def _known_tool(name: str) -> str:
    # The registry is the one list of tools. Imported here, not at the top,
    # so that the tools (and what they import) never depend on the config.
    from plane.tools.registry import TOOLS

    if name in TOOLS:
        return name
    if (mcp := MCP_TOOL.match(name)) and MCP_SERVER_NAME.match(mcp["server"]):
        return name  # the server is checked against the agent's servers (`incoherence`)
    close = difflib.get_close_matches(name, list(TOOLS), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise ValueError(
        f"{name!r} is not a tool ({hint}the tools are {', '.join(TOOLS)}, "
        "and an MCP server's as server.tool or server.*)"
    )


ToolName = Annotated[str, AfterValidator(_known_tool)]


def http_url(url: str) -> str:
    """An http(s) URL with a host, or a sentence saying what is wrong with it."""
    example = "like https://api.openai.com/v1"
    if url != url.strip() or any(c.isspace() or not c.isprintable() for c in url):
        raise ValueError(f"must be a URL without spaces or control characters, {example}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        reason = str(exc)[:1].lower() + str(exc)[1:]
        raise ValueError(f"is not a valid URL ({reason}), {example}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"must start with http:// or https://, {example}")
    if not parts.hostname:
        raise ValueError(f"has no host, {example}")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry a user or password; put the key in api_key_env's variable")
    if port == 0:
        raise ValueError(f"has port 0, {example}")
    return url


class Block(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
