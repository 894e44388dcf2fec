"""What a gateway call carries besides its prompt: a tag (what the work is
for) and the client's session, both kept with the call in the ledger.

**A tag** is the `x-plane-tag` header, or else the client's own metadata
where its API has some: Anthropic's `metadata.user_id`, OpenAI's
`metadata.tag` or `user`. The header is the caller's deliberate word, so a
bad one is refused (one line, nothing spent); metadata was written for
someone else, so a value that is not a tag is left out. A tag is short
and plain (`plane.config.TAG`): it reads in a conversation line and a
/metrics label, and no header smuggles anything into either.

**A session** is the client's own id for its conversation: Claude Code's
and Codex's headers (`plane.gateway.routing.session`), else the
`session_id` Claude Code writes inside `metadata.user_id` (as JSON since
2.1.78, as `user_…_account_…_session_…` before) — which is an identity, so
it is never taken for a tag.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from plane.config import TAG, TAG_RULE
from plane.gateway.refused import GatewayRefused
from plane.gateway.routing import session as header_session

TAG_HEADER = "x-plane-tag"
SESSION_CHARS = 64
_LEGACY_USER_ID = re.compile(r"^user_[0-9a-f]+_account_[0-9a-f-]*_session_(?P<session>[0-9a-f-]+)$")


def tag_of(headers: Mapping[str, str], body: Mapping[str, Any], api: str) -> str | None:
    """The call's tag; `GatewayRefused` (400) for an `x-plane-tag` that is not one."""
    if (given := headers.get(TAG_HEADER)) is not None:
        given = given.strip()
        if not TAG.match(given):
            shown = given if len(given) <= 40 else given[:39] + "…"
            raise GatewayRefused(400, f"{TAG_HEADER}: {shown!r} is not a tag ({TAG_RULE}).")
        return given
    for found in _from_metadata(body, api):
        if isinstance(found, str) and TAG.match(found):
            return found
    return None


def session_of(headers: Mapping[str, str], body: Mapping[str, Any]) -> str | None:
    """The client's session, from its headers or Claude Code's metadata."""
    if (found := header_session(headers)) is not None:
        return found
    user_id = _metadata(body).get("user_id")
    claude_code = _claude_code_session(user_id)
    return claude_code[:SESSION_CHARS] if claude_code else None


def _from_metadata(body: Mapping[str, Any], api: str) -> list[Any]:
    """Where each API's clients name who or what a call is for, in order."""
    metadata = _metadata(body)
    if api == "anthropic":
        user_id = metadata.get("user_id")
        return [] if _claude_code_session(user_id) is not None else [user_id]
    return [metadata.get("tag"), body.get("user")]


def _metadata(body: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = body.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def _claude_code_session(user_id: Any) -> str | None:
    """The session inside Claude Code's `metadata.user_id`, either shape."""
    if not isinstance(user_id, str):
        return None
    if (legacy := _LEGACY_USER_ID.match(user_id)) is not None:
        return legacy["session"]
    if user_id.startswith("{"):
        try:
            parsed = json.loads(user_id)
        except ValueError:
            return None
        session = parsed.get("session_id") if isinstance(parsed, dict) else None
        return session if isinstance(session, str) and session else None
    return None
