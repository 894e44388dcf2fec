"""One llama.cpp server process as the plane sees it: started, asked to
listen, waited on until healthy, and ended.

The other side of the conversation is `plane.providers.llama_server`; the
protocol between the two is drawn there.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.client import HTTPException
from pathlib import Path
from typing import IO, Any

import plane
from plane.errors import ProviderError


class Child:
    """One llama.cpp server process, its pipes, and its stderr kept in a file
    for the reason it failed."""

    def __init__(self) -> None:
        self.stderr: IO[bytes] = tempfile.TemporaryFile()
        env = dict(os.environ)
        source_root = str(Path(plane.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [source_root, env.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, "-P", "-m", "plane.providers.llama_server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            env=env,
        )

    def listening(self, settings: dict[str, Any], timeout_s: float) -> str:
        """Send the settings; the root URL once the child says it listens."""
        assert self.process.stdin and self.process.stdout
        line: str | None
        try:
            self.process.stdin.write(json.dumps(settings) + "\n")
            self.process.stdin.flush()
        except (OSError, ValueError):  # ValueError: a stop closed the pipe first
            line = ""  # it died at once (or was stopped): its stderr says why
        else:
            line = first_line(self.process.stdout, timeout_s)
        if line is None:
            self.process.kill()
            raise ProviderError(f"The embedded model did not start within {timeout_s:g} s.")
        if not line.startswith("listening "):
            raise ProviderError(f"The embedded model did not start: {self.why()}")
        return line.split(" ", 1)[1].strip().rstrip("/")

    def why(self) -> str:
        """The last line the child wrote to stderr, as the reason it failed."""
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        try:
            self.stderr.seek(0)
            text = self.stderr.read().decode(errors="replace")
        except ValueError:  # closed: the plane stopped it
            text = "it was stopped"
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return (lines[-1] if lines else "no error output").rstrip(".") + "."

    def end(self) -> None:
        """SIGTERM (it stops in ~0.06 s), SIGKILL if it lingers; reap it and
        close its pipes. Safe to call again, from any thread."""
        process = self.process
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for pipe in (process.stdin, process.stdout, self.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):  # stdin may hold unsent settings
                    pipe.close()


def first_line(stdout: IO[str], timeout_s: float) -> str | None:
    """The first line a child writes, read in a thread so that a child that
    hangs cannot hold the plane: "" once it exits or its pipe is closed under
    the read (the plane stopped it), None when nothing came within `timeout_s`."""
    result: list[str] = []

    def read() -> None:
        try:
            result.append(stdout.readline())
        except (OSError, ValueError):  # its pipe closed under it: the plane stopped it
            result.append("")

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout_s)
    if reader.is_alive():
        return None
    return result[0] if result else ""


def wait_healthy(child: Child, root: str, deadline: float, timeout_s: float) -> None:
    """Poll the child's /health (in a thread: no loop is needed) until it says ok."""
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
    while True:
        with contextlib.suppress(OSError, HTTPException, ValueError):  # not up, or loading
            with direct.open(f"{root}/health", timeout=2) as answer:
                if json.load(answer).get("status") == "ok":
                    return
        if child.process.poll() is not None:
            raise ProviderError(f"The embedded model exited: {child.why()}")
        if time.monotonic() > deadline:
            raise ProviderError(
                f"The embedded model did not become healthy within {timeout_s:g} s."
            )
        time.sleep(0.05)
