"""Starts planes for the kill suite, fast: imports the plane once, then forks
one `plane serve` per command, so fifty restarts do not pay fifty times for
the imports (1.5-3 s each on two busy cores), nor for the ones `serve` makes
lazily (the config's YAML reader, the HTTP client's transport: 0.1-0.2 s).
Each plane is a process of its own, running `plane.cli.main(["serve", ...])`
— what `python -m plane serve` runs — with its output in the log.

    python fork_planes.py CONFIG LOG      (PLANE_HOME in the environment)
    serve          → its pid
    kill PID SIG   → the signal sent, the process reaped: its wait status
"""

from __future__ import annotations

import concurrent.futures.thread  # noqa: F401  (these are imported here, not once per plane)
import gc
import os
import sys
import traceback
from pathlib import Path

import httpcore  # noqa: F401
import platformdirs  # noqa: F401

from plane import cli
from plane.config import load_config
from plane.daemon import server as _server  # noqa: F401


def _serve(config: str, log: str) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        os.setpgid(0, 0)
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        code = cli.main(["serve", "--config", config])
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main() -> None:
    config, log = sys.argv[1], sys.argv[2]
    load_config(Path(config))  # the YAML reader's lazy imports, made here once
    # What is imported here, frozen out of the collector's sight before the
    # forks: each plane's start ends with a full pass (`plane.collector`),
    # which would otherwise walk all of it again, in every plane, and copy
    # every page it touches (~20 ms of CPU a start).
    gc.collect()
    gc.freeze()
    for line in sys.stdin:
        command = line.split()
        if command[0] == "serve":
            print(_serve(config, log), flush=True)
        elif command[0] == "kill":
            pid, sig = int(command[1]), int(command[2])
            os.kill(pid, sig)
            print(os.waitpid(pid, 0)[1], flush=True)


if __name__ == "__main__":
    main()
