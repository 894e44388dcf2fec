"""The `plane` command's entry point.

`plane compress`, `plane expand` and `plane retrieve` sit in shell pipelines
and run often, so they start without loading the daemon's modules (the
client, the protocol, pydantic): only the compressor's own command module,
which loads the engine and the one format its input is. Every other command
goes to `plane.cli`.
"""

from __future__ import annotations

import gc
import os
import sys

COMPRESSION = frozenset({"compress", "expand", "retrieve"})
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in COMPRESSION:
        done = _compression(args)
        if argv is None:  # the process is this command (the console script)
            _end(done)
        return done
    if args and args[0] == "status":  # scripts poll it: see plane.cli.status
        from plane.cli.status import main as status

        done = status(args[1:])
        if argv is None:
            _end(done)
        return done
    from plane.cli import main as run

    return run(argv)


def _compression(args: list[str]) -> int:
    # One call, then the process ends: collecting reference cycles would only delay it
    # (parsing a 100 KB Python file makes objects enough for several full collections).
    gc.disable()
    from plane.economy.compress.cli import add_commands, run_plain

    try:
        done = run_plain(args)
        if done is not None:
            return done
        from plane.usage import OneLineParser

        parser = OneLineParser(prog="plane")
        add_commands(parser.add_subparsers(dest="command", required=True))
        parsed = parser.parse_args(args)
        return int(parsed.func(parsed) or 0)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`| head`): quietly, as other Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _end(code: int) -> None:
    """End the process now, its output flushed: tearing the interpreter down would free a
    shell call's objects one by one (a parsed 100 KB file's tree among them, or a snapshot
    of 100,000 rows) only to exit, a tenth of a `plane compress` call. Nothing of these
    commands runs at exit."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = EXIT_BROKEN_PIPE
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    raise SystemExit(main())
