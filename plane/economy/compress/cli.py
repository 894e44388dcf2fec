"""`plane compress`, `plane expand`, `plane retrieve`: the engine from a shell.

They work without a running plane: each opens the ref store under the
plane's home (PLANE_HOME, else the user's data directory) directly. Errors
are one line on stderr and a non-zero exit, with nothing on stdout.
Text is read and written as bytes (UTF-8, undecodable bytes carried through),
so `plane compress | plane expand` gives back the input byte for byte.

Each command imports what it needs when it runs: adding the commands to the
`plane` parser costs nothing, and `plane compress` loads the engine, the one
format its input is, and the store — not the others' modules.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

TYPE_CHECKING = False  # typing's guard, without importing typing: see plane.tuples
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from plane.economy.compress.refs import RefStore

_ENCODING = ("utf-8", "surrogateescape")


def add_commands(subparsers: Any) -> None:
    """Add compress, expand and retrieve to the `plane` command's subparsers."""
    p = subparsers.add_parser(
        "compress",
        help="compress one tool output read on stdin",
        description="Read one tool output on stdin, print it compressed; keep what was "
        "removed in the ref store so `plane expand` and `plane retrieve` can give it back.",
    )
    p.add_argument("--command", metavar="CMD", help="the command that printed the output (a hint)")
    p.add_argument("--json", action="store_true", help="print text, refs and stats as JSON")
    p.set_defaults(func=run_compress)

    p = subparsers.add_parser(
        "expand",
        help="print the original of a compressed text read on stdin",
        description="Read a compressed text on stdin and print the original, byte for byte, "
        "from the ref store (refs are kept for an hour after they are stored).",
    )
    p.set_defaults(func=run_expand)

    p = subparsers.add_parser(
        "retrieve",
        help="print what a ref stands for, or part of it",
        description="Print the chunk a marker's ref stands for: whole, or one part of it.",
    )
    p.add_argument(
        "ref", help="the ref from a marker, e.g. k_Qm9vXyZ12a (or ref:k_…, or the whole marker)"
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--lines", metavar="A:B", help="lines A to B (1-based, inclusive)")
    mode.add_argument("--chars", metavar="A:B", help="characters A to B (1-based, inclusive)")
    mode.add_argument("--pointer", metavar="/p", help="an RFC 6901 JSON pointer into a JSON chunk")
    mode.add_argument("--grep", metavar="RE", help="lines matching a regular expression, numbered")
    p.set_defaults(func=run_retrieve)


def run_plain(args: list[str]) -> int | None:
    """`plane compress [--command CMD] [--json]` and `plane expand`, run without building
    the parser (argparse's help formatter alone costs a call several milliseconds); None
    for anything else (help, a mistake, `retrieve`), which the parser then handles."""
    if args == ["expand"]:
        return run_expand(SimpleNamespace())  # type: ignore[arg-type]
    if not args or args[0] != "compress":
        return None
    command: str | None = None
    as_json = False
    rest = args[1:]
    while rest:
        word = rest.pop(0)
        if word == "--json" and not as_json:
            as_json = True
        elif word == "--command" and rest and command is None and not rest[0].startswith("-"):
            command = rest.pop(0)
        elif word.startswith("--command=") and command is None:
            command = word.removeprefix("--command=")
        else:
            return None
    return run_compress(SimpleNamespace(command=command, json=as_json))  # type: ignore[arg-type]


def _stdin() -> str:
    return sys.stdin.buffer.read().decode(*_ENCODING)


def _stdout(text: str) -> None:
    sys.stdout.buffer.write(text.encode(*_ENCODING))
    sys.stdout.buffer.flush()


def _fail(message: str, code: int = 1) -> int:
    print(f"plane: {message}", file=sys.stderr)
    return code


def _store() -> RefStore:
    from plane.economy.compress.refs import RefStore
    from plane.home import Home

    return RefStore(Home.from_env().ensure().refs_db)


def _keep(refs: dict[str, str]) -> None:
    """Post the refs to the store's inbox (see `inbox`: no SQLite in a shell command's
    path), and take a crowded inbox into the store, which also forgets expired refs."""
    from plane.economy.compress import inbox
    from plane.home import refs_db

    store = refs_db()
    if inbox.post(inbox.of(store), refs) >= inbox.CROWDED:
        with _store():
            pass


def run_compress(args: argparse.Namespace) -> int:
    from plane.economy.compress.engine import compress

    text = _stdin()
    result = compress(text, command=args.command)
    if result.refs:  # nothing removed, nothing to keep
        try:
            _keep(result.refs)
        except Exception as err:  # a store that cannot be written makes refs unretrievable
            return _fail(f"could not keep the removed text in the ref store: {err}")
    if args.json:
        import json

        stats = {
            "compressor": result.compressor,
            "chars_in": result.chars_in,
            "chars_out": result.chars_out,
            "note": result.note,
        }
        _stdout(json.dumps({"text": result.text, "refs": result.refs, "stats": stats}) + "\n")
    else:
        _stdout(result.text)
    return 0


def run_expand(args: argparse.Namespace) -> int:
    from plane.economy.compress.markers import expand
    from plane.errors import PlaneError

    text = _stdin()
    try:
        with _store() as store:
            original = expand(text, store.get)
    except PlaneError as err:
        return _fail(str(err))
    _stdout(original)
    return 0


def run_retrieve(args: argparse.Namespace) -> int:
    from plane.economy.compress.retrieve import retrieve
    from plane.errors import PlaneError

    try:
        with _store() as store:
            found = retrieve(
                store,
                _ref(args.ref),
                lines=args.lines,
                chars=args.chars,
                pointer=args.pointer,
                grep=args.grep,
            )
    except PlaneError as err:
        return _fail(str(err))
    _stdout(found if found.endswith("\n") else found + "\n")
    return 0


def _ref(given: str) -> str:
    """The ref in what was given: `k_…`, or `ref:k_…` or the whole marker as
    copied from the text (one ref in it), which is not an unknown ref."""
    from plane.economy.compress.markers import refs_in

    found = refs_in(given)
    return found[0] if len(found) == 1 else given


def main(argv: list[str] | None = None) -> int:
    """Run the three commands on their own (`python -m plane.economy.compress.cli`)."""
    import argparse

    parser = argparse.ArgumentParser(prog="plane")
    add_commands(parser.add_subparsers(dest="command_name", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
