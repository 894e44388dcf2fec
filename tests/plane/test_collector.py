"""The cyclic collector waits while the plane builds what it keeps: while
agents.yaml is read, and while the plane starts (each pass walked all that
was built so far, for nothing to free); it collects again once started."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from plane.config import load_config
from plane.daemon.server import Plane
from tests.support.fixtures_plane import CONFIG

FLEET = "".join(f"  extra-{n:05d}: {{}}\n" for n in range(3_000))


@contextmanager
def passes() -> Iterator[list[int]]:
    """The generation of each collector pass inside."""
    seen: list[int] = []

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(count)
    try:
        yield seen
    finally:
        gc.callbacks.remove(count)


def test_no_pass_while_agents_yaml_is_read(tmp_path: Path) -> None:
    path = tmp_path / "agents.yaml"
    path.write_text("defaults: {limitUsd: 5}\nagents:\n" + FLEET)
    with passes() as seen:
        config = load_config(path)
    assert len(config.agents) == 3_000
    assert len(seen) <= 1  # the young objects' pass as it collects again, at most
    assert gc.isenabled()


async def test_one_pass_while_the_plane_starts_the_one_before_freezing(
    start_plane: Any, monkeypatch: Any
) -> None:
    """No pass while the start builds; then one full pass, asked for, and
    what is left frozen before the collector runs again (its first pass
    would walk all of it as young objects, then the full pass again)."""
    seen: list[int] = []
    startup: Callable[[Plane], Any] = Plane.startup

    async def counted(plane: Plane) -> None:
        with passes() as inside:
            await startup(plane)
        seen.extend(inside)

    frozen = gc.get_freeze_count()  # the test process's own (tests/support/fixtures_heap.py)
    monkeypatch.setattr(Plane, "startup", counted)
    plane = await start_plane(CONFIG.replace("agents:\n", "agents:\n" + FLEET))
    assert len(plane.crew.workers) > 3_000
    assert seen == [2]
    assert gc.get_freeze_count() > frozen + 3_000
    assert gc.isenabled()
