"""The embedded model's child process: llama.cpp's server (xllamacpp) with
the SmolLM2 weights, run apart from the daemon.

Why a child process: llama.cpp holds the GIL while it loads and computes, and
`xllamacpp.Server` has no close; in its own process it leaves the daemon's
event loop alone and a SIGTERM stops it in a few hundredths of a second.

Protocol with the parent (`plane.providers.llama_child.Child`): one JSON line
of settings on stdin (the API key travels here, never in argv where `ps` shows
it), naming the `port` (0 the first time: any free one; a restarted child asks
for its predecessor's); one line back on stdout, `listening <url>` once the
model is loaded and serving; then the child waits for stdin to close, so it
also ends when the daemon dies without stopping it.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def serve(settings: dict[str, Any]) -> None:
    import xllamacpp  # here, not at the top: only the child loads llama.cpp

    params = xllamacpp.CommonParams()
    params.model.path = settings["gguf"]
    params.hostnames = ["127.0.0.1"]
    params.port = settings.get("port") or 0
    params.n_ctx = settings["n_ctx"]
    params.cpuparams.n_threads = settings["threads"]
    params.cpuparams_batch.n_threads = settings["threads"]
    if settings.get("poll") is not None:
        params.cpuparams.poll = settings["poll"]
        params.cpuparams_batch.poll = settings["poll"]
    params.model_alias = {settings["alias"]}
    params.verbosity = 0
    params.api_keys = [settings["api_key"]]
    if settings.get("cache_ram_mib") is not None:
        params.cache_ram_mib = settings["cache_ram_mib"]
    if settings.get("n_parallel") is not None:
        params.n_parallel = settings["n_parallel"]
    server = xllamacpp.Server(params)
    print(f"listening {server.listening_address}", flush=True)
    sys.stdin.read()  # until the parent closes it (or dies)
    del server  # stops the server's threads


def main() -> None:
    serve(json.loads(sys.stdin.readline()))


if __name__ == "__main__":
    main()
