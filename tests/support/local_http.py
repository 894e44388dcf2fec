"""An HTTP client for what the plane serves on this machine (plain
http://127.0.0.1): no TLS, so without the CA bundle httpx reads for every
client it makes, about 16 ms of CPU each, which helpers called in every
test of a file paid again and again. `post` and `get` are httpx's functions
of those names (a client a call) on such a client."""

from __future__ import annotations

from typing import Any

import httpx


def local_client(**options: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(verify=False, **options)


def post(url: str, **options: Any) -> httpx.Response:
    with httpx.Client(verify=False) as http:
        return http.post(url, **options)


def get(url: str, **options: Any) -> httpx.Response:
    with httpx.Client(verify=False) as http:
        return http.get(url, **options)
