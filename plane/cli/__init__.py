"""The `plane` command: argparse → load_config → Plane(config).serve(), and
small clients of a running plane for scripts and people.

`plane` alone opens the TUI, starting the daemon in the background when
none runs. The TUI is its own program (`python -m tui`): the daemon's
package never imports it.

One module a concern: `program` (the parser and `main`), `daemon` (serve,
stop, the TUI's start), `clients` (send, ledger, new), `status` (which
starts without pydantic: `plane.entry` sends it there directly), `connect`
(a client of the running plane), `arguments` (argument types), `failing`
(an exception → one line and an exit code). A module with commands of its
own adds them to the parser with `add_commands(sub)`.
"""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """Run one command (`plane.cli.program`). The package itself loads
    nothing, so `plane.cli.status` starts without the rest."""
    from plane.cli.program import main as run

    return run(argv)
