"""A gateway call answered with an error of the client's API, before the ledger:
raised by admission and by the forwarding alike, answered by `forward.Gateway`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class GatewayRefused(Exception):
    """A call answered with an error of the client's API, before the ledger."""

    def __init__(
        self,
        status: int,
        message: str,
        headers: Mapping[str, str] | None = None,
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.headers = dict(headers or {})
        self.body = body
        """The whole error, when it is more than the API's usual shape."""
