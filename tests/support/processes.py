"""The machine's live processes, found by their command lines in /proc: what a
test that a plane stops (or leaves running) looks for. A command's own PIDs
are those of its namespace, so a process is found by what it runs."""

from __future__ import annotations

from pathlib import Path


def running(text: str, *, at_start: bool = False) -> list[int]:
    """Live (not zombie) processes whose command line holds `text`, or with
    `at_start`, begins with it."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        matches = cmdline.startswith(text) if at_start else text in cmdline
        if matches and state != "Z":
            found.append(int(proc.name))
    return found
