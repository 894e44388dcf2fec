"""What a plane's start and stop cost in CPU, as the tests' `start_plane`
starts one: a new home with a copy of an already-migrated store, the config
parsed from its text, agents on the scripted LLM server, a real Unix socket;
then stopped. Beside each, a bare asyncio Unix-socket server started and
stopped in the same run, the floor any start stands on, and each start's
ratio to it. On a machine shared with others both move from minute to
minute: compare two trees in turns, run after run, not one run each.

    .venv/bin/python bench/plane_start.py
    .venv/bin/python bench/plane_start.py --agents 2 100 --starts 30
    .venv/bin/python bench/plane_start.py --profile 30   # cProfile of 30 starts

CPU (`time.process_time`: every thread of the process, the store's and the
scripted server's included), not wall time: on a shared machine wall time is
mostly waiting for a core. The first start of each size is not counted (the
first of anything in a process imports and caches).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fixtures_plane import launch, scripted_config  # noqa: E402
from tests.support.migrated import migrated  # noqa: E402
from tests.support.scripted_llm import ScriptedLLM  # noqa: E402


def config(agents: int) -> str:
    """The fixture's config (`demo`, `scout`) for two; numbered agents else."""
    if agents == 2:
        return scripted_config("  demo: {}\n  scout: {}\n")
    return scripted_config("".join(f"  agent-{n:04d}: {{}}\n" for n in range(agents)))


async def bare(root: Path) -> None:
    """A bare asyncio Unix-socket server, started and stopped."""
    server = await asyncio.start_unix_server(lambda r, w: None, root / "bare.sock")
    server.close()
    await server.wait_closed()
    (root / "bare.sock").unlink()


async def one_plane(root: Path, llm: ScriptedLLM, text: str, store: Path) -> None:
    running = await launch(root, llm, text, store=store)
    await running.stop()


async def each(starts: int, start) -> list[float]:
    """CPU milliseconds of each of `starts` runs of `start(root)`, the first not counted."""
    spent = []
    with tempfile.TemporaryDirectory() as directory:
        for n in range(starts + 1):
            root = Path(directory) / str(n)
            root.mkdir()
            before = time.process_time()
            await start(root)
            if n:
                spent.append((time.process_time() - before) * 1000)
    return spent


async def beside_the_floor(starts: int, start) -> tuple[list[float], list[float]]:
    """CPU milliseconds of each of `starts` runs of `start(root)`, and each
    one's ratio to the bare server's start and stop (`FLOOR_RUNS` of them)
    measured right after it: on a shared machine whose speed comes and goes,
    the ratio holds still where the milliseconds do not."""
    spent, ratios = [], []
    for _ in range(starts):
        took = (await each(1, start))[0]
        floor = statistics.median(await each(FLOOR_RUNS, bare))
        spent.append(took)
        ratios.append(took / floor)
    return spent, ratios


FLOOR_RUNS = 9


def line(name: str, spent: list[float], ratios: list[float]) -> str:
    return (
        f"{name:<18} {statistics.median(spent):7.2f} CPU-ms median "
        f"(min {min(spent):.2f}, max {max(spent):.2f}); "
        f"{statistics.median(ratios):6.1f}× the bare server's (median of the ratios)"
    )


async def measure(sizes: list[int], starts: int, store: Path, llm: ScriptedLLM) -> None:
    floor = await each(starts * FLOOR_RUNS, bare)
    print(f"{'bare asyncio Unix server':<26} {statistics.median(floor):7.2f} CPU-ms median")
    for agents in sizes:
        text = config(agents)
        spent, ratios = await beside_the_floor(
            starts, lambda root, text=text: one_plane(root, llm, text, store)
        )
        print(line(f"plane, {agents} agents", spent, ratios))


async def profile(starts: int, agents: int, store: Path, llm: ScriptedLLM) -> None:
    text = config(agents)
    await each(1, lambda root: one_plane(root, llm, text, store))  # imports, caches
    profiler = cProfile.Profile(time.process_time)  # CPU, as the figures above
    profiler.enable()
    await each(starts - 1, lambda root: one_plane(root, llm, text, store))
    profiler.disable()
    for order in ("cumulative", "tottime"):
        print(f"── {starts} starts and stops, {agents} agents, by {order} ──")
        pstats.Stats(profiler).sort_stats(order).print_stats(40)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, nargs="+", default=[2, 100])
    parser.add_argument("--starts", type=int, default=30)
    parser.add_argument("--profile", type=int, metavar="STARTS", default=0)
    args = parser.parse_args()
    os.environ.pop("PLANE_STORE", None)  # the fixture's SQLite store, always
    with tempfile.TemporaryDirectory() as directory, ScriptedLLM() as llm:
        store = migrated(Path(directory) / "plane.db")
        if args.profile:
            asyncio.run(profile(args.profile, args.agents[0], store, llm))
        else:
            asyncio.run(measure(args.agents, args.starts, store, llm))


if __name__ == "__main__":
    main()
