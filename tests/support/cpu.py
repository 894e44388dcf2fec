"""A bound on a child's CPU time, not its wall time: "refused without
working for long" holds on a loaded machine as on an idle one, where a
timer would flake."""

from __future__ import annotations

import resource
import signal
from collections.abc import Callable

REFUSAL_CPU_S = 10
"""CPU seconds a refusal may take: Python's start, the imports, the check.
A loop over an alias bomb or a nested file would take far more."""


def cpu_limit(seconds: int = REFUSAL_CPU_S) -> Callable[[], None]:
    """A `preexec_fn` for subprocess: the child is killed (SIGXCPU, then
    SIGKILL a second later) past `seconds` of CPU."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))

    return limit


def out_of_cpu(returncode: int) -> bool:
    return returncode in (-signal.SIGXCPU, -signal.SIGKILL)
